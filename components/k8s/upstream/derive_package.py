"""Facts of a chart package that its git tree does not hold: the values a release's packaging script stamps over
values.yaml before `helm package` (a pure function; scripts/refresh_upstream.py feeds it the script at the tag)."""

from __future__ import annotations

import re

_YQ_EDIT = re.compile(r'\$\{YQ\}\s+e\s+"([^"\n]*(?:\\"[^"\n]*)*)"\s+-i\s+(\S+)')
_ASSIGN = re.compile(r'(\.[\w.]+) = \\"([^"\\]*)\\"')


def chart_package_values(script: str, tag: str, values_file: str) -> dict[str, str]:
    """The values a chart-packaging script stamps into ``values_file`` for a release ``tag`` (Kueue's
    hack/helm-chart-package.sh: ``yq e ".a.b = \\"${IMAGE_REGISTRY}/kueue\\" | ..." -i charts/kueue/values.yaml``),
    with ``IMAGE_REGISTRY`` the promoted registry when the tag matches the script's promoted-version pattern (the
    staging one otherwise) and ``GIT_TAG`` the tag. What the packaged chart runs, which values.yaml in git does not
    say (it names the staging image of the release branch)."""
    registry = re.search(r'readonly k8s_registry="([^"]+)"', script)
    promoted = re.search(r"readonly promoted_version_regex='([^']+)'", script)
    staging = re.search(r"STAGING_IMAGE_REGISTRY=\$\{STAGING_IMAGE_REGISTRY:-([^}]+)\}", script)
    if not (registry and promoted and staging):
        raise ValueError("the packaging script no longer names its registries the way this parser reads them")
    image_registry = registry[1] if re.fullmatch(promoted[1], tag) else staging[1]
    chart_dir = values_file.rsplit("/", 1)[0]
    package = re.search(rf"\$\{{HELM\}} package [^\n]*\s{re.escape(chart_dir)}\s", script)
    if package is None:
        raise ValueError(f"the packaging script never runs `helm package` on {chart_dir}")
    out: dict[str, str] = {}
    for expression, target in _YQ_EDIT.findall(script[:package.start()]):  # what it restores afterwards is not shipped
        if target != values_file:
            continue
        for path, value in _ASSIGN.findall(expression):
            out[path.lstrip(".")] = value.replace("${IMAGE_REGISTRY}", image_registry).replace("${GIT_TAG}", tag)
    if not out:
        raise ValueError(f"the packaging script stamps nothing into {values_file}")
    return out
