"""The tests of evidence_app mirror its packages (issue 45, item 4): a test module sits in
``tests/evidence_app/<package>/``, named for the evidence_app package it mostly tests
(``tests/evidence_app/trust/test_audit_judge.py`` tests ``evidence_app/trust/``), so the
tests of a capability are found where its code is. Directly in ``tests/evidence_app/``
sit only what every folder shares: ``conftest.py`` (its fixtures apply to the subfolders)
and the ``*_helpers.py`` modules."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TESTS = ROOT / "tests" / "evidence_app"
SHARED = {"__init__.py", "conftest.py"}


def misplaced(test_files: list[Path], *, root: Path = ROOT) -> list[str]:
    """The files under ``tests/evidence_app/`` that break the layout, each with why: a
    test module directly in ``tests/evidence_app/``, a folder that names no package of
    evidence_app, or a folder without ``__init__.py`` (the test modules are imported by
    their dotted names, so two folders may hold modules of the same name)."""
    tests = root / "tests" / "evidence_app"
    found: list[str] = []
    for path in test_files:
        relative = path.relative_to(tests)
        name = relative.as_posix()
        folder = relative.parent
        if folder == Path("."):
            if path.name not in SHARED and not path.name.endswith("_helpers.py"):
                found.append(f"{name}: in no package's folder")
            continue
        package = root / "evidence_app" / folder
        if not (package / "__init__.py").exists():
            found.append(f"{name}: evidence_app/{folder.as_posix()}/ is no package")
        elif not (tests / folder / "__init__.py").exists():
            found.append(f"{name}: tests/evidence_app/{folder.as_posix()}/ has no __init__.py")
    return sorted(found)


def test_every_test_module_of_evidence_app_sits_in_its_package_s_folder() -> None:
    """Issue 45: no test module directly in tests/evidence_app/, none in a folder that
    names no evidence_app package."""
    files = sorted(TESTS.rglob("*.py"))
    assert len([p for p in files if p.name.startswith("test_")]) > 30
    assert misplaced(files) == []


def test_the_check_sees_a_test_module_out_of_place(tmp_path: Path) -> None:
    """The check itself: a test module left directly in tests/evidence_app/, one in a
    folder named for no package, and one in a folder without ``__init__.py`` are each
    named; a helper, the conftest and a test in its package's folder are not."""
    (tmp_path / "evidence_app" / "trust").mkdir(parents=True)
    (tmp_path / "evidence_app" / "trust" / "__init__.py").touch()
    (tmp_path / "evidence_app" / "packets").mkdir()
    (tmp_path / "evidence_app" / "packets" / "__init__.py").touch()
    tests = tmp_path / "tests" / "evidence_app"
    for folder in ("trust", "misc", "packets"):
        (tests / folder).mkdir(parents=True)
    (tests / "trust" / "__init__.py").touch()
    (tests / "misc" / "__init__.py").touch()
    files = [
        tests / "conftest.py",
        tests / "trust_helpers.py",
        tests / "test_flat.py",
        tests / "trust" / "test_rates.py",
        tests / "misc" / "test_other.py",
        tests / "packets" / "test_packets.py",
    ]
    assert misplaced(files, root=tmp_path) == [
        "misc/test_other.py: evidence_app/misc/ is no package",
        "packets/test_packets.py: tests/evidence_app/packets/ has no __init__.py",
        "test_flat.py: in no package's folder",
    ]
