"""Templates shipped in the wheel as linkwrap/templates (top-level templates/ in the repository)."""
import os


def template_text(name: str) -> str:
    """The text of templates/<name>; raises FileNotFoundError if it is not there."""
    from importlib import resources
    try:
        return resources.files("linkwrap.templates").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        # Running from a source checkout without installing: templates/ is beside linkwrap/.
        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates", name)
        with open(here, encoding="utf-8") as f:
            return f.read()


def doc_path(name: str) -> str:
    """Where docs/<name> is on this machine: the copy shipped in the wheel (linkwrap/docs),
    else the source checkout's docs/. Messages cite this path, which a pip install can open."""
    package = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(package, "docs", name)
    if os.path.exists(shipped):
        return shipped
    return os.path.join(os.path.dirname(package), "docs", name)
