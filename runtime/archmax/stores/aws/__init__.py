"""The AWS session store: DynamoDB (one item per session, the commit point) + S3 (bodies and files).

Only this package (with ``hosting/`` and ``models/bedrock``) imports boto3/botocore; the engine never
does. Rule source: BEHAVIOUR.md §9, DESIGN.md §3.
"""

from archmax.stores.aws.store import AwsStore

__all__ = ["AwsStore"]
