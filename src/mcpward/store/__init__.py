"""Storage: the state directory, secret key files, and SQLite connections shared by the stores."""
