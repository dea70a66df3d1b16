"""Server-rendered HTML shared by the gateway's pages: the API docs page and the page frame.

No script, no CDN: the machines that run memstream may have no internet.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1180px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}code,pre{font:12px ui-monospace,monospace}
pre{background:#f4f6f9;padding:10px;overflow:auto}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #dde2ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9}.m{font-weight:600;color:#235}.tag{display:inline-block;padding:0 6px;
border-radius:3px;background:#e8edf5;margin-right:4px}.bad{color:#a02020}.ok{color:#1c6b2c}
form{margin:12px 0}input{padding:4px;margin-right:6px}a{color:#1f4fa0}
"""


def frame(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )


def docs_page(spec: dict[str, Any]) -> str:
    """Every operation of the OpenAPI document with its parameters and body schema."""
    parts = [
        f"<h1>{escape(spec['info']['title'])} <small>{escape(str(spec['info']['version']))}"
        "</small></h1>",
        f"<p>{escape(spec['info'].get('description', ''))}</p>",
        "<p>Machine-readable: <a href='/openapi.json'>/openapi.json</a></p>",
    ]
    for path, operations in spec.get("paths", {}).items():
        for method, op in operations.items():
            parts.append(
                f"<h2><span class='tag'>{escape(method.upper())}</span><code>{escape(path)}"
                f"</code></h2><p>{escape(op.get('summary', ''))}</p>"
            )
            params = op.get("parameters", [])
            if params:
                rows = "".join(
                    f"<tr><td><code>{escape(p['name'])}</code></td><td>{escape(p['in'])}</td>"
                    f"<td>{escape(p.get('description', ''))}</td></tr>"
                    for p in params
                )
                parts.append(
                    f"<table><tr><th>parameter</th><th>in</th><th></th></tr>{rows}</table>"
                )
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                schema = _resolve(body.get("schema", {}), spec)
                parts.append(f"<pre>{escape(json.dumps(schema, indent=2))}</pre>")
    return frame("memstream gateway — API", "".join(parts))


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        resolved: dict[str, Any] = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return resolved
    return schema
