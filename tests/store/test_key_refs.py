"""`keys.pins` as a SecretRef: decoded from hex or base64, read and never created, clear errors
for a missing or malformed key that never repeat the value; the pin store runs on it."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcpward.contracts.store import PinStoreError
from mcpward.secret_refs import SecretRef
from mcpward.store.factory import PINS_KEY_NAME, StoreContext, open_pin_store
from mcpward.store.keys import KeyFileError, decode_key, key_from_ref
from mcpward.store.settings import KeysSettings, StoreSettings
from tests.contracts.test_pin_store import pin

KEY = bytes(range(32))


@pytest.mark.parametrize(
    "text",
    [
        KEY.hex(),
        KEY.hex().upper(),
        base64.b64encode(KEY).decode(),
        base64.urlsafe_b64encode(KEY).decode().rstrip("="),
        f"  {KEY.hex()}\n",
    ],
)
def test_hex_and_base64_decode_to_the_key(text: str) -> None:
    assert decode_key(text) == KEY


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("zz" * 32, "decodes to 48 bytes, expected 32"),
        ("*" * 64, "neither 64 hex digits nor base64"),
        (base64.b64encode(KEY[:31]).decode(), "decodes to 31 bytes, expected 32"),
        (KEY.hex()[:-2], "decodes to 46 bytes"),  # 62 hex digits, read as base64
        ("not a key at all!", "neither"),
    ],
)
def test_malformed_keys_say_what_is_wrong_not_what_they_hold(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as info:
        decode_key(text)
    if text:
        assert text not in str(info.value)


def test_ref_errors_name_the_setting_and_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPWARD_TEST_PINS_KEY", raising=False)
    with pytest.raises(KeyFileError, match=r"keys\.pins: environment variable MCPWARD_TEST_PINS"):
        key_from_ref(SecretRef(env="MCPWARD_TEST_PINS_KEY"), "keys.pins")
    with pytest.raises(KeyFileError, match=r"keys\.pins: cannot read .*missing"):
        key_from_ref(SecretRef(file=tmp_path / "missing"), "keys.pins")
    bad = tmp_path / "bad"
    bad.write_text("secret-looking-but-short\n")
    with pytest.raises(KeyFileError, match=r"keys.pins \(file .*bad\) is not a usable key") as info:
        key_from_ref(SecretRef(file=bad), "keys.pins")
    assert "secret-looking" not in str(info.value)
    good = tmp_path / "good"
    good.write_text(base64.b64encode(KEY).decode() + "\n")
    assert key_from_ref(SecretRef(file=good), "keys.pins") == KEY


def test_a_prefix_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"keys\.pins takes no prefix"):
        KeysSettings.model_validate({"pins": {"env": "X", "prefix": "k:"}})


def context(tmp_path: Path, ref: SecretRef | None) -> StoreContext:
    keys = tmp_path / "keys"
    return StoreContext(StoreSettings(), tmp_path / "state", keys, tmp_path / "c.yaml", ref)


def test_the_pin_store_runs_on_the_ref_and_no_key_file_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPWARD_TEST_PINS_KEY", KEY.hex())
    ctx = context(tmp_path, SecretRef(env="MCPWARD_TEST_PINS_KEY"))
    assert ctx.pins_key() == KEY
    assert ctx.cli_args() == ("--config", str(tmp_path / "c.yaml"))  # the dir alone lacks it
    store = open_pin_store(ctx)
    store.write("up", put=[pin("echo")])
    store.close()
    assert not (ctx.keys_dir / PINS_KEY_NAME).exists()
    assert not (ctx.state_dir / PINS_KEY_NAME).exists()

    monkeypatch.setenv("MCPWARD_TEST_PINS_KEY", base64.b64encode(KEY).decode())
    store = open_pin_store(ctx)
    assert "echo" in {name for _, name in store.load("up").pins} and not store.load("up").tampered
    store.close()
    monkeypatch.setenv("MCPWARD_TEST_PINS_KEY", secrets.token_hex(32))  # another key
    store = open_pin_store(ctx)
    assert store.load("up").tampered  # rows MACed with the first key do not pass
    store.close()
    monkeypatch.setenv("MCPWARD_TEST_PINS_KEY", "short")
    with pytest.raises(PinStoreError, match=r"keys\.pins .*is not a usable key"):
        open_pin_store(ctx)
