"""Mint the MultiKueue manager's short-lived credentials to its worker clusters and write them as the kubeconfig
Secrets Kueue reads (docs/fleet-queue.md "Credentials"). Runs on the manager as a CronJob; stdlib only.

Kueue 0.19 refuses kubeconfigs with a token file or an exec plugin, so a kubeconfig carries a bearer token. Here that
token is one the worker's cloud issues to the manager's own identity, for at most an hour, and this job replaces it
before it expires: nothing long-lived exists to leak. Per worker cloud, from the pod's projected ServiceAccount token
(the manager cluster's OIDC issuer, trusted by the worker's cloud for this one ServiceAccount):
  aws    STS AssumeRoleWithWebIdentity (a role the worker's EKS access entry maps to a Kubernetes group), then a
         presigned sts:GetCallerIdentity URL as EKS expects it (k8s-aws-v1. token, 15 minutes;
         kubernetes-sigs/aws-iam-authenticator v0.7.18 pkg/token/token.go)
  gcp    STS token exchange at the worker's workload identity pool provider, then the worker's Google service
         account's access token (iamcredentials generateAccessToken, 1 hour), which GKE's DNS endpoint authorises
  azure  an Entra ID token for AKS (client credentials with the ServiceAccount token as the federated assertion)

Environment (set by components/k8s/fleetqueue.py):
  MINT_WORKERS       the workers file: a JSON list of objects (below)
  MINT_NAMESPACE     where the Secrets live (Kueue's namespace: MultiKueue reads kubeconfig Secrets there)
  MINT_SECRET_KEY    the Secret key Kueue reads (MultiKueueConfigSecretKey in Kueue's API)
  MINT_REFRESH_S     a Secret is rewritten once its token expires within this many seconds
  KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT_HTTPS, SERVICEACCOUNT_DIR   the manager's own API server
  MINT_CA_FILE       optional: the CA bundle to trust for the clouds' token services (default: the system's)

A worker: {"name", "cloud", "server", "ca_data" (base64 PEM; "" for a publicly trusted name), "secret", "token_file"
(the projected token for that worker), and per cloud: aws "region", "cluster", "role_arn"; gcp "provider" (the
pool provider's resource name), "service_account"; azure "tenant_id", "client_id"; optional "token_url" (and for
gcp "iam_url") override the cloud's token services (tests). A worker without "server" is pending (its stack has not
exported it yet).

Exit 0 when every worker that is not pending has a fresh kubeconfig, 1 otherwise. Tokens are never printed.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from typing import Any

SERVICEACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
EXPIRES = "gpufleet.io/token-expires"  # annotations of the Secret: when its token expires, and for which server
SERVER = "gpufleet.io/server"
# EKS: kubernetes-sigs/aws-iam-authenticator v0.7.18 pkg/token/token.go (v1Prefix, clusterIDHeader,
# requestPresignParam; presignedURLExpiration 15 min, which the client reports as 14)
EKS_PREFIX, EKS_HEADER, EKS_PRESIGN_S, EKS_LIFETIME = "k8s-aws-v1.", "x-k8s-aws-id", 60, dt.timedelta(minutes=14)
STS_VERSION = "2011-06-15"
STS_NS = "{https://sts.amazonaws.com/doc/2011-06-15/}"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_STS = "https://sts.googleapis.com/v1/token"
GOOGLE_IAM = "https://iamcredentials.googleapis.com/v1/"
GOOGLE_LIFETIME_S = 3600
# the AKS Microsoft Entra server application every AKS cluster with Entra ID accepts tokens for
# (https://learn.microsoft.com/azure/aks/kubelogin-authentication, "--server-id")
AKS_SERVER_APP = "6dae42f8-4368-4678-94ff-3960e28e3630"
ENTRA = "https://login.microsoftonline.com/"


def log(message: str) -> None:
    print(f"{dt.datetime.now(dt.UTC):%H:%M:%S} mint-kubeconfigs: {message}", flush=True)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Http:
    def __init__(self, cafile: str | None):
        self.tls = ssl.create_default_context(cafile=cafile)

    def call(self, method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> bytes:
        request = urllib.request.Request(url, method=method, data=body, headers=headers or {})
        with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
            return bytes(response.read())

    def form(self, url: str, fields: dict[str, str], accept: str = "application/json") -> bytes:
        return self.call("POST", url, urllib.parse.urlencode(fields).encode(),
                         {"Content-Type": "application/x-www-form-urlencoded", "Accept": accept})

    def json(self, url: str, body: dict[str, Any], bearer: str = "") -> Any:
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {bearer}"} if bearer else {})}
        return json.loads(self.call("POST", url, json.dumps(body).encode(), headers))


# --- AWS: a presigned sts:GetCallerIdentity, as EKS verifies it -----------------------------------------------------

def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="-_.~")


def presign_eks(host: str, region: str, cluster: str, creds: dict[str, str], at: dt.datetime) -> str:
    """SigV4 query signing (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) of GET
    https://<host>/?Action=GetCallerIdentity with the x-k8s-aws-id header signed, as aws-iam-authenticator does."""
    stamp, day = at.strftime("%Y%m%dT%H%M%SZ"), at.strftime("%Y%m%d")
    scope = f"{day}/{region}/sts/aws4_request"
    query = {"Action": "GetCallerIdentity", "Version": STS_VERSION, "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
             "X-Amz-Credential": f"{creds['AccessKeyId']}/{scope}", "X-Amz-Date": stamp,
             "X-Amz-Expires": str(EKS_PRESIGN_S), "X-Amz-SignedHeaders": f"host;{EKS_HEADER}",
             "X-Amz-Security-Token": creds["SessionToken"]}
    canonical_query = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items()))
    request = "\n".join(["GET", "/", canonical_query, f"host:{host}\n{EKS_HEADER}:{cluster}\n",
                         f"host;{EKS_HEADER}", hashlib.sha256(b"").hexdigest()])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(request.encode()).hexdigest()])
    key = _hmac(("AWS4" + creds["SecretAccessKey"]).encode(), day)
    for part in (region, "sts", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"https://{host}/?{canonical_query}&X-Amz-Signature={signature}"


def aws_token(http: Http, w: dict[str, Any], web: str, at: dt.datetime) -> tuple[str, dt.datetime]:
    sts = w.get("token_url") or f"https://sts.{w['region']}.amazonaws.com/"
    answer = http.form(sts, {"Action": "AssumeRoleWithWebIdentity", "Version": STS_VERSION, "RoleArn": w["role_arn"],
                             "RoleSessionName": "gpufleet-multikueue", "WebIdentityToken": web,
                             "DurationSeconds": "900"}, accept="text/xml")
    node = ET.fromstring(answer).find(f".//{STS_NS}Credentials")
    if node is None:
        raise ValueError("the STS answer has no Credentials")
    creds = {child.tag.removeprefix(STS_NS): child.text or "" for child in node}
    host = urllib.parse.urlsplit(f"https://sts.{w['region']}.amazonaws.com/").netloc  # EKS checks the STS host
    url = presign_eks(host, w["region"], w["cluster"], creds, at)
    token = EKS_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return token, at + EKS_LIFETIME


def gcp_token(http: Http, w: dict[str, Any], web: str, at: dt.datetime) -> tuple[str, dt.datetime]:
    federated = http.json(w.get("token_url") or GOOGLE_STS, {
        "grantType": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": f"//iam.googleapis.com/"
        f"{w['provider']}", "scope": CLOUD_PLATFORM, "requestedTokenType": "urn:ietf:params:oauth:token-type:"
        "access_token", "subjectTokenType": "urn:ietf:params:oauth:token-type:jwt", "subjectToken": web})
    account = f"{w.get('iam_url') or GOOGLE_IAM}projects/-/serviceAccounts/{w['service_account']}"
    answer = http.json(f"{account}:generateAccessToken",
                       {"scope": [CLOUD_PLATFORM], "lifetime": f"{GOOGLE_LIFETIME_S}s"},
                       bearer=federated["access_token"])
    return answer["accessToken"], dt.datetime.fromisoformat(answer["expireTime"].replace("Z", "+00:00"))


def azure_token(http: Http, w: dict[str, Any], web: str, at: dt.datetime) -> tuple[str, dt.datetime]:
    answer = json.loads(http.form(f"{w.get('token_url') or ENTRA}{w['tenant_id']}/oauth2/v2.0/token", {
        "client_id": w["client_id"], "scope": f"{AKS_SERVER_APP}/.default", "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": web}))
    return answer["access_token"], at + dt.timedelta(seconds=int(answer["expires_in"]))


MINT = {"aws": aws_token, "gcp": gcp_token, "azure": azure_token}


def kubeconfig(w: dict[str, Any], token: str) -> bytes:
    """What Kueue accepts (multikueuecluster.go validateKubeconfig): a server, CA data (never a file), a token."""
    cluster: dict[str, Any] = {"server": w["server"]}
    if w.get("ca_data"):
        cluster["certificate-authority-data"] = w["ca_data"]
    return json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": w["name"],
                       "clusters": [{"name": w["name"], "cluster": cluster}],
                       "users": [{"name": w["name"], "user": {"token": token}}],
                       "contexts": [{"name": w["name"], "context": {"cluster": w["name"], "user": w["name"]}}]},
                      indent=1).encode()


class Manager:
    """The manager's own API server, for the Secrets (the pod's ServiceAccount token, read per request)."""

    def __init__(self, env: dict[str, str]):
        host = env["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        self.account = env.get("SERVICEACCOUNT_DIR", SERVICEACCOUNT)
        self.base = (f"https://{host}:{env['KUBERNETES_SERVICE_PORT_HTTPS']}/api/v1/namespaces/"
                     f"{env['MINT_NAMESPACE']}/secrets")
        self.tls = ssl.create_default_context(cafile=f"{self.account}/ca.crt")

    def call(self, method: str, url: str, body: Any = None) -> Any:
        with open(f"{self.account}/token") as f:
            token = f.read().strip()
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
            return json.load(response)

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.call("GET", f"{self.base}/{name}"))
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise

    def put(self, name: str, key: str, data: bytes, annotations: dict[str, str], old: dict[str, Any] | None) -> None:
        meta: dict[str, Any] = {"name": name, "annotations": annotations,
                                "labels": {"app.kubernetes.io/managed-by": "gpufleet-mint-kubeconfigs"}}
        if old is not None:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]  # a concurrent writer makes this fail
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta,
                  "data": {key: base64.b64encode(data).decode()}}
        if old is None:
            self.call("POST", self.base, secret)
        else:
            self.call("PUT", f"{self.base}/{name}", secret)


def fresh(secret: dict[str, Any] | None, w: dict[str, Any], at: dt.datetime, refresh_s: float) -> dt.datetime | None:
    """The expiry of the Secret's token when it is for this server and good for longer than ``refresh_s``."""
    notes = ((secret or {}).get("metadata") or {}).get("annotations") or {}
    if notes.get(SERVER) != w["server"] or EXPIRES not in notes:
        return None
    expires = dt.datetime.fromisoformat(notes[EXPIRES])
    return expires if (expires - at).total_seconds() > refresh_s else None


def run(env: dict[str, str]) -> int:
    with open(env["MINT_WORKERS"]) as f:
        workers = json.load(f)
    http, manager = Http(env.get("MINT_CA_FILE") or None), Manager(env)
    refresh_s, key, failed = float(env["MINT_REFRESH_S"]), env["MINT_SECRET_KEY"], 0
    for w in workers:
        name = w["name"]
        if not w.get("server"):
            log(f"{name}: pending (its stack has not exported its API server yet); skipped")
            continue
        try:
            old, at = manager.get(w["secret"]), now()
            until = fresh(old, w, at, refresh_s)
            if until is not None:
                log(f"{name}: token good until {until:%H:%M:%S}; left as it is")
                continue
            with open(w["token_file"]) as f:
                web = f.read().strip()
            token, expires = MINT[w["cloud"]](http, w, web, at)
            manager.put(w["secret"], key, kubeconfig(w, token),
                        {EXPIRES: expires.isoformat(), SERVER: w["server"]}, old)
            log(f"{name}: wrote {w['secret']} ({w['cloud']} token until {expires:%H:%M:%S})")
        except urllib.error.HTTPError as err:  # the answer's body may echo a credential: only its status
            failed += 1
            log(f"{name}: FAILED: HTTP {err.code} {err.reason} from {urllib.parse.urlsplit(err.url).netloc}")
        except (OSError, ValueError, KeyError, ET.ParseError) as err:
            failed += 1
            log(f"{name}: FAILED: {type(err).__name__}: {err}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(dict(os.environ)))
