"""What a session is made of: ids and paths, records, variables, runtime notes, firings and results.

Rule sources: BEHAVIOUR.md §1 (glossary), §3.1 and §3.11 (statuses, park records, result models),
§4 (session ids and paths), §6 (variables), §7 (runtime notes), §9.3 (the checkpoint record).
"""
