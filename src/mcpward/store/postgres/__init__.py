"""The PostgreSQL backend of the shared state: pool, migrations, pins, notify, revocations."""
