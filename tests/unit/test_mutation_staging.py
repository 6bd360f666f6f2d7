"""The mutation check's staging settings, per module: what mutmut mutates and copies and what pytest
runs all exist in the checkout, and only the modules whose tests share syntheses load the stats
plugin; and the sample a slow module is measured on."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import devkit.mutation
from devkit.mutation import PACKAGES, pyproject, sample
from devkit.mutation_modules import MODULES, Module, by_name

REPO = Path(__file__).resolve().parents[2]


def _staged(path: str) -> Path:
    """Where a staged path comes from: a package (staged at the top level) or the checkout."""
    package, _, rest = path.partition("/")
    return PACKAGES[package] / rest if package in PACKAGES else REPO / path


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.name)
def test_every_path_a_module_stages_or_runs_exists(module: Module) -> None:
    settings = tomllib.loads(pyproject(module))
    mutmut = settings["tool"]["mutmut"]
    assert mutmut["only_mutate"] == list(module.mutated)
    for path in module.mutated:
        assert _staged(path).is_file(), path
    for test in [*module.tests, *module.deselected]:
        path, _, name = test.partition("::")
        assert _staged(path).exists(), test
        assert not name or f"def {name.split('[')[0]}(" in _staged(path).read_text(), test
    for read in module.reads:
        assert (REPO / read).exists(), read
        assert read in mutmut["also_copy"]
    cli = mutmut["pytest_add_cli_args"]
    assert [cli[i + 1] for i, arg in enumerate(cli) if arg == "--deselect"] == list(module.deselected)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.name)
def test_only_modules_with_shared_syntheses_load_the_stats_plugin(module: Module) -> None:
    cli = tomllib.loads(pyproject(module))["tool"]["mutmut"]["pytest_add_cli_args"]
    loaded = [cli[i + 1] for i, arg in enumerate(cli) if arg == "-p"]
    assert ("devkit.mutation_fixture_hits" in loaded) is module.shared_fixtures
    assert (module.name == "construct") is module.shared_fixtures


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.name)
def test_modules_whose_tests_start_a_jsii_kernel_run_their_mutants_from_a_fork_server(module: Module) -> None:
    mutmut = tomllib.loads(pyproject(module))["tool"]["mutmut"]
    assert mutmut["process_isolation"] == ("forkserver" if module.fork_server else "fork")
    # Collecting the tests in the server would import the CDK there, and every mutant would share
    # its kernel: the server imports nothing.
    assert mutmut.get("forkserver_warmup") == ("none" if module.fork_server else None)
    assert (module.name == "construct") is module.fork_server


def _mutants(per_file: dict[str, int]) -> dict[str, str]:
    return {
        f"livekit_fleet_remediation.constructs.{file}.x_f__mutmut_{i}": "not checked"
        for file, count in per_file.items()
        for i in range(1, count + 1)
    }


def test_a_sample_takes_its_share_of_every_file_at_least_three_and_the_same_again_for_a_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(devkit.mutation, "results", lambda staging: _mutants({"big": 400, "small": 10}))
    construct = by_name("construct")
    chosen = sample(construct, 7.5, 31)
    from_big = [name for name in chosen if ".big." in name]
    assert (len(from_big), len(chosen) - len(from_big)) == (30, 3)
    assert len(set(chosen)) == len(chosen)
    assert sample(construct, 7.5, 31) == chosen
    assert sample(construct, 7.5, 32) != chosen
    assert len(sample(construct, 100, 31)) == 410


def test_a_module_without_mutants_yet_cannot_be_sampled_and_says_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(devkit.mutation, "results", lambda staging: {})
    with pytest.raises(SystemExit, match="construct: no mutants to sample yet: run the module once"):
        sample(by_name("construct"), 7.5, 31)
