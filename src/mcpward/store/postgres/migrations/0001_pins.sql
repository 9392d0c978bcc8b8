-- Pins, holds, their history, and token revocations. Every row carries an HMAC made with a key
-- that lives in keys.dir, never in this database: an edit made here is detected at load.
CREATE TABLE pin_meta (
    key text PRIMARY KEY,
    value text NOT NULL,
    mac text NOT NULL
);
CREATE TABLE pin_upstreams (
    upstream text PRIMARY KEY,
    digest text NOT NULL,
    kinds text NOT NULL,
    updated_at double precision NOT NULL,
    mac text NOT NULL
);
CREATE TABLE pins (
    upstream text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    hash text NOT NULL,
    contract text NOT NULL,
    pinned_at double precision NOT NULL,
    source text NOT NULL,
    mac text NOT NULL,
    PRIMARY KEY (upstream, kind, name)
);
CREATE TABLE pin_holds (
    upstream text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    body text NOT NULL,
    mac text NOT NULL,
    PRIMARY KEY (upstream, kind, name)
);
-- Append-only: every pin put/delete and hold put/delete, who made it (source) and when.
CREATE TABLE pin_history (
    id bigserial PRIMARY KEY,
    at double precision NOT NULL,
    upstream text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    action text NOT NULL,
    hash text,
    source text NOT NULL,
    mac text NOT NULL
);
CREATE INDEX pin_history_item ON pin_history (upstream, kind, name, id);
-- Revoked bearer tokens: by client id or by sha256 of the token.
CREATE TABLE token_revocations (
    subject text PRIMARY KEY,
    revoked_at double precision NOT NULL,
    mac text NOT NULL
);
