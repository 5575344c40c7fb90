"""The MultiKueue manager's token minter (components/k8s/data/mint_kubeconfigs.py, docs/fleet-queue.md
"Credentials"): EKS tokens signed as AWS's own signer signs them, kubeconfigs Kueue accepts, a Secret rewritten
only when its token is about to expire, and no token ever printed."""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import json
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SCRIPT = Path(__file__).parents[3] / "components" / "k8s" / "data" / "mint_kubeconfigs.py"
AT = dt.datetime(2026, 12, 2, 1, 30, 0, tzinfo=dt.UTC)
CREDS = {"AccessKeyId": "ASIAFAKEFAKEFAKEFAKE", "SecretAccessKey": "fake/secret/key", "SessionToken": "fake-session"}


def minter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mint_kubeconfigs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_eks_token_is_the_url_botocore_presigns_with_the_cluster_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """aws-iam-authenticator presigns sts:GetCallerIdentity with x-k8s-aws-id signed in: botocore's SigV4 query
    signer, given the same request, time and credentials, gives the same signature."""
    mint = minter()
    ours = urllib.parse.urlsplit(mint.presign_eks("sts.us-east-1.amazonaws.com", "us-east-1", "train", CREDS, AT))
    request = AWSRequest(method="GET", url="https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&"
                         "Version=2011-06-15", headers={"x-k8s-aws-id": "train"})
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: AT.replace(tzinfo=None))
    SigV4QueryAuth(Credentials(CREDS["AccessKeyId"], CREDS["SecretAccessKey"], CREDS["SessionToken"]), "sts",
                   "us-east-1", expires=60).add_auth(request)
    theirs = urllib.parse.urlsplit(request.url)
    assert dict(urllib.parse.parse_qsl(ours.query)) == dict(urllib.parse.parse_qsl(theirs.query))
    assert (ours.netloc, ours.path) == (theirs.netloc, theirs.path)


def test_a_kubeconfig_carries_a_token_and_ca_data_never_a_file_or_plugin() -> None:
    """Kueue 0.19 refuses tokenFile, file paths, exec plugins and insecure-skip-tls-verify (multikueuecluster.go)."""
    mint = minter()
    worker = {"name": "gcp-train-train", "server": "https://gke.example", "ca_data": ""}
    config = json.loads(mint.kubeconfig(worker, "T0KEN"))
    assert config["users"] == [{"name": "gcp-train-train", "user": {"token": "T0KEN"}}]
    assert config["clusters"] == [{"name": "gcp-train-train", "cluster": {"server": "https://gke.example"}}]
    with_ca = json.loads(mint.kubeconfig({**worker, "ca_data": "Q0E="}, "T0KEN"))
    assert with_ca["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0E="
    text = json.dumps(with_ca)
    assert not any(word in text for word in ("tokenFile", "exec", "insecure", "certificate-authority\""))


@pytest.mark.parametrize(("left_s", "fresh"), [(601, True), (600, False), (0, False)])
def test_a_secret_is_fresh_only_with_more_than_the_refresh_margin_left(left_s: int, fresh: bool) -> None:
    mint = minter()
    worker = {"server": "https://w"}
    secret = {"metadata": {"annotations": {mint.SERVER: "https://w",
                                           mint.EXPIRES: (AT + dt.timedelta(seconds=left_s)).isoformat()}}}
    assert (mint.fresh(secret, worker, AT, 600) is not None) is fresh
    assert mint.fresh(secret, {"server": "https://moved"}, AT, 600) is None  # a new server: a new token
    assert mint.fresh(None, worker, AT, 600) is None


class FakeManager:
    """FAKE: the manager's Secrets in memory."""

    def __init__(self, secrets: dict[str, dict[str, Any]]):
        self.secrets = secrets
        self.writes: list[str] = []

    def get(self, name: str) -> dict[str, Any] | None:
        return self.secrets.get(name)

    def put(self, name: str, key: str, data: bytes, annotations: dict[str, str], old: Any) -> None:
        self.writes.append(name)
        self.secrets[name] = {"metadata": {"annotations": annotations},
                              "data": {key: base64.b64encode(data).decode()}}


def test_a_run_skips_pending_workers_keeps_fresh_tokens_and_never_prints_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    mint = minter()
    token_file = tmp_path / "projected"
    token_file.write_text("PROJECTED-JWT\n")
    workers = [{"name": "pending", "cloud": "gcp", "secret": "multikueue-pending"},
               {"name": "fresh", "cloud": "gcp", "server": "https://f", "secret": "multikueue-fresh",
                "token_file": str(token_file)},
               {"name": "stale", "cloud": "azure", "server": "https://s", "secret": "multikueue-stale",
                "token_file": str(token_file)},
               {"name": "broken", "cloud": "aws", "server": "https://b", "secret": "multikueue-broken",
                "token_file": str(tmp_path / "missing")}]
    (tmp_path / "workers.json").write_text(json.dumps(workers))
    now = dt.datetime.now(dt.UTC)
    manager = FakeManager({"multikueue-fresh": {"metadata": {"annotations": {
        mint.SERVER: "https://f", mint.EXPIRES: (now + dt.timedelta(hours=1)).isoformat()}}}})
    asked: list[tuple[str, str]] = []

    def azure(http: Any, w: dict[str, Any], web: str, at: dt.datetime) -> tuple[str, dt.datetime]:
        asked.append((w["name"], web))
        return "SECRET-ENTRA-TOKEN", at + dt.timedelta(hours=1)

    monkeypatch.setitem(mint.MINT, "azure", azure)
    monkeypatch.setattr(mint, "Manager", lambda env: manager)
    code = mint.run({"MINT_WORKERS": str(tmp_path / "workers.json"), "MINT_REFRESH_S": "600",
                     "MINT_SECRET_KEY": "kubeconfig"})
    assert code == 1  # the broken worker failed
    assert asked == [("stale", "PROJECTED-JWT")]  # the projected token, read from the worker's file
    assert manager.writes == ["multikueue-stale"]
    written = json.loads(base64.b64decode(manager.secrets["multikueue-stale"]["data"]["kubeconfig"]))
    assert written["users"][0]["user"]["token"] == "SECRET-ENTRA-TOKEN"
    out = capsys.readouterr().out
    assert "SECRET-ENTRA-TOKEN" not in out and "PROJECTED-JWT" not in out
    assert "pending: pending" in out and "fresh: token good until" in out and "broken: FAILED" in out
