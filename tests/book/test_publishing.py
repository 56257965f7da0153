"""The GitHub Pages workflow: valid, builds from the committed notebooks only, deploys the built HTML."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "deploy-book.yml"


def _workflow() -> dict:
    flow = yaml.safe_load(WORKFLOW.read_text())
    flow["on"] = flow.pop(True, flow.get("on"))  # YAML 1.1 reads the key `on` as True
    return flow


def test_workflow_is_valid_and_publishes_the_built_html():
    flow = _workflow()
    assert set(flow["on"]) >= {"push", "workflow_dispatch"} and flow["on"]["push"]["branches"] == ["main"]
    assert flow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]
    runs = [s.get("run", "") for s in build["steps"]]
    uses = [s.get("uses", "") for s in build["steps"]]
    assert "make site" in runs, "the workflow must build with the Makefile's site target"
    assert not any(word in r for r in runs for word in ("make book", "make notebooks", "runbook", "papermill")), (
        "publishing must render the committed notebooks, not execute them"
    )
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert any(u.startswith("actions/checkout") for u in uses) and any(u.startswith("actions/setup-python") for u in uses)
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])


def test_site_target_makes_the_site_relocatable():
    makefile = (ROOT / "Makefile").read_text()
    site = makefile.split("\nsite:", 1)[1].split("\n\n", 1)[0]
    assert "html" in site.splitlines()[0] and ".nojekyll" in site, "GitHub Pages hides _static without .nojekyll"
