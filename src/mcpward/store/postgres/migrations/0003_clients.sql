-- Client records shared by the fleet: per client id, roles and/or a consent ceiling that replace
-- the config file's value for that client (NULL: the config's value stands). Each row carries an
-- HMAC made with the key in keys.dir (never in this database): an edited row refuses its client.
CREATE TABLE client_records (
    client_id text PRIMARY KEY,
    roles text,
    consent_ceiling text CHECK (consent_ceiling IN ('read_only', 'no_destructive', 'full')),
    updated_at double precision NOT NULL,
    mac text NOT NULL
);
