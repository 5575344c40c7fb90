"""Re-derive the upstream digests of the in-cluster layer from the pinned upstream releases.

Reads components/k8s/upstream/pins.yaml (ONE row per upstream artefact: chart + version + the git repository and
ref holding its chart, CRDs and manifests), reads each row's files with `git show <ref>:<path>` and writes the
facts it derives (never the files) to components/k8s/upstream/digests/<row>.json, with the repository, ref,
commit, paths and the date read.

Add a pin (e.g. a KubeRay chart): add a row to pins.yaml, with `chart`, `repo`, `version`, `docs`,
`git: {repo, ref}`, `chart_dir` and the `crds` files of every kind the add-on layer will emit; run this script
for that row; reference it from components/k8s/charts.py as `pinned("<row>")`. The tests then validate every
custom resource of those kinds against the digest and every values key against the chart's.

Bump a pin: change `version` and `git.ref` in the row, run this script for it, review both diffs.

Git sources: a bare mirror per repository under --mirror (layouts `<owner>+<name>/repo` or
`<owner>/<name>.git`); a repository missing there is cloned (blobless) from GitHub into it, and a ref missing
from a mirror is fetched. Offline, point --mirror at mirrors you already have.

Examples:
    python scripts/refresh_upstream.py                    # every row
    python scripts/refresh_upstream.py kueue gke-gpudirect
    python scripts/refresh_upstream.py --mirror /work/.mirror --check   # exit 1 if a digest would change
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.k8s import upstream  # noqa: E402
from components.k8s.upstream import (  # noqa: E402
    derive,
    derive_cpp,
    derive_go,
    derive_manifests,
    derive_package,
    derive_release,
)

DEFAULT_MIRROR = Path(os.environ.get("GPUFLEET_UPSTREAM_MIRROR", Path.home() / ".cache" / "gpufleet" / "upstream"))
console = Console(stderr=True)


class GitSource:
    """One upstream repository, read at a ref from a bare mirror (cloned / fetched on demand)."""

    def __init__(self, repo: str, mirror: Path, offline: bool):
        owner, name = repo.split("/")
        self.repo = repo
        candidates = [mirror / f"{owner}+{name}" / "repo", mirror / owner / f"{name}.git"]
        self.git_dir = next((c for c in candidates if c.exists()), candidates[1])
        if not self.git_dir.exists():
            if offline:
                raise SystemExit(f"{repo}: no mirror under {mirror} (looked for {', '.join(map(str, candidates))}) "
                                 "and --offline was given: fetch it or drop --offline")
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            self._git("clone", "--bare", "--filter=blob:none", f"https://github.com/{repo}", str(self.git_dir),
                      git_dir=False)
        self.offline = offline

    def _git(self, *args: str, git_dir: bool = True) -> str:
        cmd = ["git", *(["--git-dir", str(self.git_dir)] if git_dir else []), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"{self.repo}: `{' '.join(cmd)}` failed: {done.stderr.strip()}")
        return done.stdout

    def commit(self, ref: str) -> str:
        try:
            return self._git("rev-parse", f"{ref}^{{commit}}").strip()
        except RuntimeError:
            if self.offline:
                raise
            self._git("fetch", "origin", f"+refs/tags/{ref}:refs/tags/{ref}" if not re.fullmatch(r"[0-9a-f]{40}", ref)
                      else ref)
            return self._git("rev-parse", f"{ref}^{{commit}}").strip()

    def date(self, commit: str) -> str:
        return self._git("show", "-s", "--format=%cs", commit).strip()

    def show(self, commit: str, path: str) -> str:
        return self._git("show", f"{commit}:{path}")

    def files(self, commit: str, directory: str) -> list[str]:
        return self._git("ls-tree", "-r", "--name-only", commit, directory.rstrip("/") + "/").split()


def _chart(source: GitSource, commit: str, chart_dir: str, paths: list[str]) -> dict[str, Any]:
    """Chart facts of chart_dir, with vendored subcharts (chart_dir/charts/<name>/) nested under their name."""
    files = source.files(commit, chart_dir)
    own = [f for f in files if f.startswith(f"{chart_dir}/templates/")]
    vendored: dict[str, dict[str, Any]] = {}
    for chart_yaml in sorted(f for f in files if re.fullmatch(rf"{re.escape(chart_dir)}/charts/[^/]+/Chart\.yaml", f)):
        sub_dir = chart_yaml.rsplit("/", 1)[0]
        if f"{sub_dir}/values.yaml" in files:
            sub = _chart(source, commit, sub_dir, paths)
            vendored[sub["name"]] = sub
    paths += [f"{chart_dir}/Chart.yaml", f"{chart_dir}/values.yaml"]
    return derive.chart_facts(source.show(commit, f"{chart_dir}/Chart.yaml"),
                              source.show(commit, f"{chart_dir}/values.yaml"),
                              (source.show(commit, t) for t in own if t.endswith((".yaml", ".tpl", ".txt"))),
                              vendored)


def _manifest(text: str, path: str) -> dict[str, Any]:
    if path.endswith(".sh"):  # an install script: the files it applies, in order
        return {"applies": re.findall(r'kubectl apply -f "\$repo/([^"]+)"', text)}
    if path.endswith(".json"):  # a component's own config file: the keys it reads
        return {"keys": derive_manifests.config_keys(json.loads(text))}
    if path.endswith("metadata/annotations.yaml"):  # an OLM bundle: its package and channels
        return {"annotations": yaml.safe_load(text)["annotations"]}
    out = {"objects": derive_manifests.manifest_kinds(text), "workloads": derive_manifests.workloads_in(text)}
    env = derive_manifests.mpirun_env(text)
    return {**out, "mpirun_env": env} if env else out


def _cpp(text: str, wants: dict[str, Any]) -> dict[str, Any]:
    """The facts ``wants`` names from one C/C++ file (keys as pins.yaml documents under ``cpp``)."""
    out: dict[str, Any] = {}
    if wants.get("defines"):
        out["defines"] = derive_cpp.c_defines(text, wants["defines"])
    if wants.get("enums"):
        out["enums"] = derive_cpp.c_enum_values(text, wants["enums"])
    for fn in wants.get("returns", []):
        out.setdefault("returns", {})[fn] = derive_cpp.cpp_returns(text, fn)
    for fn in wants.get("tclap", []):
        out.setdefault("tclap", {})[fn] = {"args": derive_cpp.tclap_args(text, fn),
                                           "cases": derive_cpp.cpp_char_cases(text, fn)}
    if wants.get("json_keys"):
        out["json_keys"] = derive_cpp.json_subscripts(text)
    return out


def _metrics(source: GitSource, commit: str, spec: dict[str, Any], paths: list[str]) -> list[str]:
    """The metric series an exporter publishes, from its source: Go metric definitions (``go`` files, names
    prefixed with ``prefix``), the keys of Go map literals starting with ``key_prefix`` (``go_keys``, then
    ``prefix``ed), a counters CSV (``csv``) or the markdown metric tables under ``markdown`` (a dir)."""
    names: set[str] = set()
    for path in spec.get("go", []):
        paths.append(path)
        names.update(derive.go_metrics(source.show(commit, path), spec.get("prefix", "")))
    for path in spec.get("csv", []):
        paths.append(path)
        names.update(derive.csv_metrics(source.show(commit, path)))
    for path in spec.get("go_keys", []):
        paths.append(path)
        keys = derive.go_map_keys(source.show(commit, path), spec.get("key_prefix", ""))
        names.update(spec.get("prefix", "") + key for key in keys)
    if "markdown" in spec:
        for path in (f for f in source.files(commit, spec["markdown"]) if f.endswith(".md")):
            paths.append(path)
            names.update(derive.markdown_metrics(source.show(commit, path)))
    return sorted(names)


def _tool(source: GitSource, commit: str, spec: dict[str, Any], ref: str, paths: list[str]) -> dict[str, Any]:
    """A CLI tool the layer runs in a container: its image and tag, its commands, its flags, and per backend the
    registered name and config options (rclone: the remote types and options an env-only config may use)."""
    docker = spec["docker"]
    paths += [docker["install"], docker["workflow"], docker["dockerfile"], spec["flags"], spec["commands"],
              *spec["backends"], spec["s3_providers"]]
    commands = sorted(Path(f).stem.removeprefix("rclone_").replace("_", " ")
                      for f in source.files(commit, spec["commands"]) if f.endswith(".md"))
    pages = {c: f"{spec['commands']}/rclone_{c.replace(' ', '_')}.md" for c in spec.get("command_flags", [])}
    paths += list(pages.values())
    return {**derive.docker_image(source.show(commit, docker["install"]), source.show(commit, docker["workflow"]),
                                  source.show(commit, docker["dockerfile"]), ref),
            "commands": commands, "flags": derive.markdown_flags(source.show(commit, spec["flags"])),
            **({"command_flags": {c: derive.markdown_flags(source.show(commit, page)) for c, page in pages.items()}}
               if pages else {}),
            "backends": {path: derive.go_backend(source.show(commit, path)) for path in spec["backends"]},
            "s3_providers": sorted(Path(f).stem for f in source.files(commit, spec["s3_providers"])
                                   if f.endswith(".yaml"))}


def _values(text: str, keys: list[str]) -> dict[str, Any]:
    document = derive.yaml_document(text)
    return {key: derive.value_at(document, key) for key in keys}


# Row fields whose facts come file by file: {path: what to read} (or a list of paths) -> facts of each file's text.
PER_FILE: dict[str, Callable[[str, Any], Any]] = {
    "constants": derive.go_constants,
    "structs": derive.go_structs,
    "values": _values,
    "flags": lambda text, _: derive.go_flags(text),
    "cpp": _cpp,
    "dockerfiles": lambda text, _: derive_cpp.dockerfile_facts(text),
    "tables": derive.markdown_table,
    "feature_gates": derive_go.feature_gates,
    "texts": lambda text, _: text.strip(),
    "cluster_roles": lambda text, _: derive_manifests.cluster_roles(text),
    "multikueue_adapters": derive_go.remote_verbs,
}


def _release(source: GitSource, commit: str, spec: dict[str, Any], tag: str, paths: list[str]) -> dict[str, Any]:
    """What a release publishes when CI builds its installable files (components/k8s/upstream/derive_release.py):
    the asset URL and files, the release image, the objects of the named chart templates rendered with the release
    values, and the CRD names of the chart's crds/ (the crds asset)."""
    chart = spec["chart_dir"]
    crd_files = [f for f in source.files(commit, f"{chart}/crds") if f.endswith(".yaml")]
    templates = [f"{chart}/{t}" for t in spec["templates"]]
    paths += [spec["script"], spec["workflow"], spec["values"], *templates, f"{chart}/crds"]
    url, assets = derive_release.asset_url(source.show(commit, spec["script"]), tag)
    return {"url": url, "assets": assets, "image": derive_release.workflow_image(source.show(commit, spec["workflow"]),
                                                                               tag),
            "objects": derive_release.release_objects([source.show(commit, t) for t in templates],
                                                      source.show(commit, spec["values"])),
            "crds": derive_release.crd_names([source.show(commit, f) for f in crd_files])}


def derive_pin(name: str, row: dict[str, Any], mirror: Path, offline: bool, today: str) -> dict[str, Any]:
    source = GitSource(row["git"]["repo"], mirror, offline)
    commit = source.commit(str(row["git"]["ref"]))
    paths: list[str] = []
    out: dict[str, Any] = {"pin": name, "source": {
        "repository": f"https://github.com/{row['git']['repo']}", "ref": str(row["git"]["ref"]), "commit": commit,
        "commit_date": source.date(commit), "read": today, "paths": paths}}
    if "chart_dir" in row:
        chart = _chart(source, commit, row["chart_dir"], paths)
        for prefix, sub in (row.get("subcharts") or {}).items():
            sub_source = GitSource(sub["git"]["repo"], mirror, offline)
            sub_commit = sub_source.commit(str(sub["git"]["ref"]))
            facts = _chart(sub_source, sub_commit, sub["chart_dir"], [])
            paths.append(f"{sub['git']['repo']}@{sub['git']['ref']}:{sub['chart_dir']}")
            free = {*chart["free"], *(f"{prefix}.{k}" for k in facts["free"])}
            keys = {*chart["keys"], prefix, *(f"{prefix}.{k}" for k in facts["keys"])}
            chart["keys"] = sorted(derive.outside(keys, free))
            chart["free"] = sorted(derive.outside(free, free))
            chart.setdefault("subcharts", {})[prefix] = {"version": facts["version"], "ref": str(sub["git"]["ref"])}
        if row.get("record"):
            values = yaml.safe_load(source.show(commit, f"{row['chart_dir']}/values.yaml"))
            chart["defaults"] = {path: derive.value_at(values, path) for path in row["record"]}
        out["chart"] = chart
    if row.get("crds"):
        crds: dict[str, Any] = {}
        for path in row["crds"]:
            paths.append(path)
            for document in derive.crds_in(source.show(commit, path)):
                if row.get("kinds") and document["spec"]["names"]["kind"] not in row["kinds"]:
                    continue
                facts = derive.crd_facts(document)
                crds[f"{facts['group']}/{facts['kind']}"] = {**facts, "path": path}
        out["crds"] = dict(sorted(crds.items()))
    if row.get("images"):
        out["images"] = {}
        for key, path in row["images"].items():
            paths.append(path)
            text = source.show(commit, path)
            out["images"][key] = {"path": path, "images": derive_manifests.images_in(text)}
            if derive_manifests.ray_versions_in(text):
                out["images"][key]["ray_versions"] = derive_manifests.ray_versions_in(text)
    for kind, facts_of in PER_FILE.items():  # in this order: it is the order of the digest's source paths
        if row.get(kind):
            files = row[kind].items() if isinstance(row[kind], dict) else ((path, None) for path in row[kind])
            out[kind] = {}
            for path, wants in files:
                paths.append(path)
                out[kind][path] = facts_of(source.show(commit, path), wants)
    if row.get("chart_package"):  # what the release's chart package stamps over values.yaml (images, tags)
        paths.append(row["chart_package"])
        out["chart_package"] = derive_package.chart_package_values(
            source.show(commit, row["chart_package"]), str(row["git"]["ref"]), f"{row['chart_dir']}/values.yaml")
    if row.get("metrics"):
        out["metrics"] = _metrics(source, commit, row["metrics"], paths)
    if row.get("release"):
        out["release"] = _release(source, commit, row["release"], str(row["git"]["ref"]), paths)
    if row.get("tool"):
        out["tool"] = _tool(source, commit, row["tool"], str(row["git"]["ref"]), paths)
    if row.get("manifests"):
        out["manifests"] = {}
        for key, path in row["manifests"].items():
            paths.append(path)
            text = source.show(commit, path)
            out["manifests"][key] = {"path": path, **_manifest(text, path)}
            if key in row.get("services", []):
                out["manifests"][key]["services"] = derive_manifests.services_in(text)
    return out


def _write(path: Path, facts: dict[str, Any], check: bool) -> bool:
    """Write the digest (keeping the old read date when nothing else changed); True when it changed."""
    old = json.loads(path.read_text()) if path.exists() else None
    if old is not None:
        same = {**facts, "source": {**facts["source"], "read": old["source"].get("read")}}
        if same == old:
            return False
    if not check:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pins", nargs="*", help="pin rows to refresh (default: every row of pins.yaml)")
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR,
                        help="directory of bare git mirrors (default: $GPUFLEET_UPSTREAM_MIRROR or %(default)s)")
    parser.add_argument("--offline", action="store_true", help="never clone or fetch; use the mirrors as they are")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any digest would change")
    args = parser.parse_args(argv)
    rows = upstream.pins()
    unknown = [p for p in args.pins if p not in rows]
    if unknown:
        parser.error(f"unknown pin(s) {', '.join(unknown)}; pins.yaml has: {', '.join(rows)}")
    today = dt.datetime.now(dt.UTC).date().isoformat()
    changed = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("deriving upstream facts", total=len(args.pins or rows))
        for name in args.pins or list(rows):
            progress.update(task, description=f"{name} @ {rows[name]['git']['ref']}")
            facts = derive_pin(name, rows[name], args.mirror, args.offline, today)
            if _write(upstream.digest_path(name), facts, args.check):
                changed.append(name)
            progress.advance(task)
    verb = "would change" if args.check else "changed"
    console.print(f"{len(changed)} digest(s) {verb}: {', '.join(changed) or '-'}")
    print(yaml.safe_dump({"changed": changed}, default_flow_style=True).strip())
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
