"""Deploy local model folders on the test's NDIF server (ndif's own deploy library), each under the key a client's
``nnsight.TransformersModel(folder, task="text-generation")`` sends, with its size given (no Hub lookup)."""

import json
import sys
from pathlib import Path

from ndif.cli.lib.deploy import deploy


def model_key(folder: str) -> str:
    """The key nnsight's client computes for a local folder served under its own path."""
    return "nnsight.modeling.transformers.TransformersModel:" + json.dumps(
        {"repo_id": folder, "revision": None, "task": "text-generation"})


def main(folders: list[str]) -> int:
    specs = [{"checkpoint": f, "model_key": model_key(f), "pinned": True, "dtype": "float32", "padding_bias": 0,
              "size_bytes": sum(p.stat().st_size for p in Path(f).glob("*.safetensors"))} for f in folders]
    result = deploy(specs, on_message=print)
    print(json.dumps(result))
    return 0 if all(d["status"] == "READY" for d in result["deployments"]) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
