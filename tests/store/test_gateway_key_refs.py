"""A gateway (in this process; SQLite, then PostgreSQL store) with all three keys given by
SecretRefs (`keys.pins` and `keys.signing` from the environment, `keys.ledger_hmac` from a file):
its keys directory stays empty, `ledger verify --config` passes, the public key is derived, a
swapped key is caught by `verify`, and a missing or malformed key refuses the start by name."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.config.loader import load_config
from mcpward.evidence.keyring import signer_from_seed
from mcpward.relay.gateway import Gateway, GatewayStartError
from tests.store.fleet import replica_config, write_control
from tests.store.pg import DSN_ENV
from tests.store.test_clients_fleet import serving

pytestmark = pytest.mark.asyncio
PINS, SIGNING = "MCPWARD_TEST_PINS_KEY", "MCPWARD_TEST_SIGNING_KEY"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def verify(config: Path) -> tuple[int, dict[str, object]]:
    code, out = cli("ledger", "verify", "--json", "--config", str(config))
    return code, json.loads(out)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_gateway_on_key_refs_leaves_its_keys_dir_empty(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    postgres = kind == "postgres"
    if postgres:
        monkeypatch.setenv(DSN_ENV, request.getfixturevalue("pg_dsn"))
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    hmac_file = tmp_path / "secrets" / "ledger-hmac"
    hmac_file.parent.mkdir()
    hmac_file.write_text(secrets.token_hex(32) + "\n")
    seed = secrets.token_bytes(32)
    monkeypatch.setenv(PINS, secrets.token_hex(32))
    monkeypatch.setenv(SIGNING, seed.hex())
    control = tmp_path / "control.json"
    write_control(control, 0)
    replica = replica_config(tmp_path, "gw", keys, control, postgres=postgres)
    data = yaml.safe_load(replica.config.read_text(encoding="utf-8"))
    data["keys"] = {
        "dir": str(keys),
        "pins": {"env": PINS},
        "ledger_hmac": [{"file": str(hmac_file)}],
        "signing": {"env": SIGNING},
    }
    replica.config.write_text(yaml.safe_dump(data), encoding="utf-8")
    if postgres:
        assert cli("store", "migrate", "--config", str(replica.config))[0] == 0

    async with serving(replica), replica.client() as session:
        for amount in range(3):
            result = await session.call_tool("transfer", {"amount": amount, "memo": "refs"})
            assert not result.is_error, result
    assert list(keys.iterdir()) == []
    code, report = verify(replica.config)
    assert code == 0 and report["state"] == "ok" and report["hmac_checked"], report
    assert cli("ledger", "public-key", "--config", str(replica.config)) == (
        0,
        signer_from_seed(seed).verifier().encode() + "\n",
    )

    good_hmac = hmac_file.read_text()
    hmac_file.write_text(secrets.token_hex(32))  # another key under the same reference
    code, report = verify(replica.config)
    assert (code, report["state"], report["reason"]) == (1, "tampered", "hmac_key_unknown")
    hmac_file.write_text(good_hmac)
    monkeypatch.setenv(SIGNING, secrets.token_hex(32))
    code, report = verify(replica.config)
    assert (code, report["state"], report["reason"]) == (1, "tampered", "checkpoint_key_unknown")

    monkeypatch.setenv(SIGNING, "not-a-key-" + seed.hex()[:20])
    with pytest.raises(GatewayStartError, match=rf"keys\.signing \(env {SIGNING}\) is not") as bad:
        await Gateway.start(load_config(replica.config))
    assert seed.hex()[:20] not in str(bad.value)
    monkeypatch.setenv(SIGNING, seed.hex())
    hmac_file.unlink()
    with pytest.raises(GatewayStartError, match=r"evidence: keys\.ledger_hmac\[0\]: cannot read"):
        await Gateway.start(load_config(replica.config))
    assert list(keys.iterdir()) == []
