"""Metrics a shell script publishes through node exporter's textfile collector: the text exposition format as a
printf format, and the write that node exporter never sees half done (it reads only files ending in ``.prom``,
collector/textfile.go at v1.9.1, and ``mv`` within one directory is a rename)."""

from __future__ import annotations


def printf_series(name: str, kind: str, text: str, value: str, label: str = "") -> str:
    """One series with its HELP and TYPE lines, as a double-quoted printf format (``label``: ``{k=\\"v\\"}``)."""
    return f"# HELP {name} {text}\\n# TYPE {name} {kind}\\n{name}{label} {value}\\n"


def replace_file(commands: str, path: str) -> str:
    """Shell that writes what ``commands`` print to ``path`` through a temporary file and a rename."""
    return f"{{ {commands}; }} > {path}.tmp && mv {path}.tmp {path}"
