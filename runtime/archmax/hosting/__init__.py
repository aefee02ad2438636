"""Hosting: the inbox, leases and drains, the sweep, the HTTP error table and the platform wiring.

What a firing means for a deployed host lives here (DESIGN.md §3 "Inbox", §4); stores only store.
"""
