"""sporeling.goldenstick's public names, per public module, against tests/api_snapshot.txt.

As the core's test (packages/core-runtime/tests/test_api_snapshot.py): a public name lost by
accident fails here, listing what was lost; new names pass (printed, with ``-s``) until the
file is regenerated. After an intended change, regenerate and commit the file::

    SPORELING_UPDATE_API_SNAPSHOT=1 nox -R -s "tests(package='golden-stick')" -- \\
        packages/golden-stick/tests/test_api_snapshot.py
"""

from pathlib import Path

from sporeling_testing.api_snapshot import check_snapshot

MODULES = [
    "sporeling.goldenstick",
    "sporeling.goldenstick.artifacts",
    "sporeling.goldenstick.comp_algo",
    "sporeling.goldenstick.datasets",
    "sporeling.goldenstick.deploy_runtime",
    "sporeling.goldenstick.export",
    "sporeling.goldenstick.fold_bn",
    "sporeling.goldenstick.layer_spec",
    "sporeling.goldenstick.models",
    "sporeling.goldenstick.net_transformer",
    "sporeling.goldenstick.pruner",
    "sporeling.goldenstick.quantization",
    "sporeling.goldenstick.workflow",
]

SNAPSHOT = Path(__file__).with_name("api_snapshot.txt")


def test_public_api_snapshot():
    added = check_snapshot(MODULES, SNAPSHOT)
    if added:  # not a failure: recorded when the file is next regenerated
        print(f"{len(added)} public names not yet in {SNAPSHOT.name}:", *added, sep="\n  + ")
