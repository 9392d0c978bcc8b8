"""The PostgreSQL store's failure, importable without the driver (a SQLite gateway never loads
psycopg, yet names this exception in its start-up checks)."""


class PostgresUnavailable(Exception):
    """No connection to the database (DSN unreadable, server down, pool exhausted)."""
