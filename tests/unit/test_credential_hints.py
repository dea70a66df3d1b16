"""What a command says when it has no credential for a tenant: which tenant, and the two
commands that make one (read from the data dir's credentials.json, no database needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstream.ops.identity import CredentialsMissing, credential_for, save_credential
from memstream.services.settings import Settings


def written(data_dir: Path) -> Settings:
    settings = Settings(data_dir=data_dir)
    document = {"default_tenant": "dev", "tenants": {"dev": {"producer": "P", "agent": "A"}}}
    settings.credentials_path.parent.mkdir(parents=True, exist_ok=True)
    settings.credentials_path.write_text(json.dumps(document), encoding="utf-8")
    return settings


def test_a_tenant_without_a_credential_is_named_with_the_commands_that_make_one(
    tmp_path: Path,
) -> None:
    settings = written(tmp_path)
    with pytest.raises(CredentialsMissing) as caught:
        credential_for(settings, "producer", tenant="acme")
    message = str(caught.value)
    assert "tenant 'acme'" in message and "dev" in message  # which tenant, which it has
    assert "memstream tenants create acme" in message
    assert "memstream keys create --tenant acme --role producer --source" in message
    assert "start `memstream up`" not in message  # up is not what is missing


def test_an_agent_hint_names_no_sources(tmp_path: Path) -> None:
    with pytest.raises(CredentialsMissing) as caught:
        credential_for(written(tmp_path), "agent", tenant="acme")
    assert "memstream keys create --tenant acme --role agent --save" in str(caught.value)
    assert "--source" not in str(caught.value)


def test_without_a_credentials_file_the_hint_is_memstream_up(tmp_path: Path) -> None:
    with pytest.raises(CredentialsMissing) as caught:
        credential_for(Settings(data_dir=tmp_path), "producer")
    assert "start `memstream up`" in str(caught.value)


def test_a_saved_credential_is_found_for_its_tenant_and_the_default_is_kept(
    tmp_path: Path,
) -> None:
    settings = written(tmp_path)
    save_credential(settings, "acme", "producer", "SECRET")
    assert credential_for(settings, "producer", tenant="acme") == "SECRET"
    assert credential_for(settings, "producer") == "P"  # the default tenant is still dev
    assert settings.credentials_path.stat().st_mode & 0o777 == 0o600


def test_a_first_saved_credential_makes_its_tenant_the_default(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "fresh")
    save_credential(settings, "acme", "agent", "SECRET")
    assert credential_for(settings, "agent") == "SECRET"
