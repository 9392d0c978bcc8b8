-- The fleet's ledger: one hash chain (one global sequence) shared by every replica, its signed
-- checkpoints and the durability levels it was written at. Rows are never updated or deleted.
CREATE TABLE ledger_meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO ledger_meta (key, value) VALUES
    ('schema', '1'),
    ('ledger_id', substr(md5(random()::text || clock_timestamp()::text), 1, 16));

CREATE TABLE ledger_entries (
    seq bigint PRIMARY KEY CHECK (seq >= 0),
    body bytea NOT NULL,
    entry_hash bytea NOT NULL,
    hmac bytea NOT NULL,
    recorded_at double precision NOT NULL
);
CREATE INDEX ledger_entries_time ON ledger_entries (recorded_at);

CREATE TABLE ledger_checkpoints (
    id bigserial PRIMARY KEY,
    size bigint NOT NULL,
    created_at double precision NOT NULL,
    note text NOT NULL
);

CREATE TABLE ledger_durability (
    id bigserial PRIMARY KEY,
    since_seq bigint NOT NULL,
    level text NOT NULL,
    noted_at double precision NOT NULL
);

CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only (% on %)', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_checkpoints_append_only BEFORE UPDATE OR DELETE ON ledger_checkpoints
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_checkpoints_no_truncate BEFORE TRUNCATE ON ledger_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
