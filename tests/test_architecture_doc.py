"""docs/architecture.md stays true (issue "One house"): every module its "Where each
behaviour lives" table names exists, and its model table lists every model of the apps."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else None]


def _table_cells(section: str, column: int) -> list[str]:
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row.split(" | ")[column] for row in rows[1:] if not row.startswith("|---")]


def test_every_module_the_behaviour_table_names_exists() -> None:
    cells = _table_cells(_section("Where each behaviour lives"), 1)
    paths = [p for cell in cells for p in re.findall(r"`([^`]+)`", cell) if "/" in p or "." in p]
    assert len(paths) > 40
    missing = [p for p in paths if not (ROOT / p.rstrip("/")).exists()]
    assert missing == []


def test_the_model_table_lists_every_model_of_the_apps() -> None:
    """Each model with its app and the file that defines it."""
    section = _section("Models")
    listed = {
        (model.strip("|` "), app.strip("` "), where.strip("` "))
        for model, app, where in zip(*(_table_cells(section, i) for i in range(3)), strict=True)
    }
    actual = {
        (model.__name__, model._meta.app_label, model.__module__.replace(".", "/") + ".py")
        for model in apps.get_models()
        if model._meta.app_label in {"tasks_app", "evidence_app"}
    }
    assert listed == actual


def _app_packages() -> set[str]:
    """Every package of the two apps (a folder with an ``__init__.py``), migrations aside."""
    return {
        init.parent.relative_to(ROOT).as_posix() + "/"
        for app in ("tasks_app", "evidence_app")
        for init in (ROOT / app).glob("*/__init__.py")
        if init.parent.name != "migrations"
    }


def _capability_rows() -> dict[str, str]:
    """Package -> the rest of its row, from the tables of "The apps by capability"."""
    rows: dict[str, str] = {}
    for line in _section("The apps by capability").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0]) if line.startswith("| `") else []
        if names:
            rows[names[0]] = " | ".join(cells[1:])
    return rows


def test_every_package_of_the_apps_has_a_row_and_every_module_it_names_exists() -> None:
    """Issue 35: the capability tables list every package of tasks_app and evidence_app
    (no more, no fewer), and each module a row names (relative to its package) exists."""
    rows = _capability_rows()
    assert set(rows) == _app_packages()
    missing = [
        f"{package}{name}"
        for package, rest in rows.items()
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", rest)
        if not (ROOT / package / name).exists() and not (ROOT / name).exists()
    ]
    assert missing == []
    assert sum(len(re.findall(r"`[\w/]+\.py`", rest)) for rest in rows.values()) > 60


def test_the_layers_the_doc_gives_are_the_contracts_order() -> None:
    """Issue 35: the evidence_app table lists its packages in the order of the layers
    contract in pyproject.toml (top first), so the doc says which package may import which."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    for app in ("tasks_app", "evidence_app"):
        (contract,) = [c for c in contracts if c.get("containers") == [app]]
        layered = [
            name
            for layer in contract["layers"]
            for name in re.split(r"[|:]", layer)
            if f"{app}/{name.strip()}/" in _app_packages()
        ]
        documented = [
            package.split("/")[1]
            for package in _capability_rows()
            if package.startswith(f"{app}/")
            and package.split("/")[1] in {name.strip() for name in layered}
        ]
        assert documented == [name.strip() for name in layered]


def test_where_to_look_first_names_functions_that_exist() -> None:
    """Issue 35: each place the newcomer's table points to defines the function it names."""
    section = _section("The apps by capability")
    start = section.index("### Where to look first")
    for row in section[start:].splitlines()[4:]:
        if not row.startswith("| "):
            continue
        cell = row.split(" | ")[1]
        for path, names in re.findall(r"`([\w/]+\.py)` \(([^)]*)\)", cell):
            source = (ROOT / path).read_text(encoding="utf-8")
            for name in re.findall(r"`([\w.]+)`", names):
                assert re.search(rf"(def|class) {name.split('.')[-1]}\b", source), (path, name)


def _product_modules() -> set[str]:
    """Every module of the product: .py files of project/, tasks_app/ and evidence_app/,
    migrations and ``__init__.py`` aside."""
    return {
        path.relative_to(ROOT).as_posix()
        for app in ("project", "tasks_app", "evidence_app")
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and path.name != "__init__.py"
    }


def _listed_modules(section: str) -> list[str]:
    return re.findall(r"^- `([\w/]+\.py)`: \S", section, re.M)


def test_every_product_module_has_one_line_in_the_module_list() -> None:
    """Issue 45: "Every module" lists each product module once, with what it holds, and
    names no module that does not exist."""
    listed = _listed_modules(_section("Every module"))
    assert sorted(p for p in set(listed) if listed.count(p) > 1) == []
    assert sorted(_product_modules() - set(listed)) == []
    assert sorted(set(listed) - _product_modules()) == []


def test_the_check_sees_a_module_missing_from_the_list() -> None:
    """The check itself: a list without one module misses it."""
    section = _section("Every module")
    line = next(line for line in section.splitlines() if line.startswith("- `project/"))
    missing = _product_modules() - set(_listed_modules(section.replace(line + "\n", "")))
    assert missing == {line.split("`")[1]}


def _file_roles(text: str) -> list[str]:
    start = text.index("## File roles")
    end = text.find("\n## ", start + 1)
    return re.findall(r"^- `([\w/.]+)`", text[start:end], re.M)


def test_contributing_and_the_architecture_name_the_same_file_roles() -> None:
    """Issue 45: the file roles are named alike in CONTRIBUTING.md and here."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    roles = _file_roles(DOC)
    assert {"models.py", "selectors.py", "services.py", "views.py", "forms.py"} <= set(roles)
    assert _file_roles(contributing) == roles
