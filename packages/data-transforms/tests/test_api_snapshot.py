"""sporeling.data's public names, per public module, against tests/api_snapshot.txt.

As the core's test (packages/core-runtime/tests/test_api_snapshot.py): a public name lost by
accident fails here, listing what was lost; new names pass (printed, with ``-s``) until the
file is regenerated. After an intended change, regenerate and commit the file::

    SPORELING_UPDATE_API_SNAPSHOT=1 nox -R -s "tests(package='data-transforms')" -- \\
        packages/data-transforms/tests/test_api_snapshot.py
"""

from pathlib import Path

from sporeling_testing.api_snapshot import check_snapshot

MODULES = [
    "sporeling.data",
    "sporeling.data.config",
    "sporeling.data.datasets",
    "sporeling.data.engine",
    "sporeling.data.mindrecord",
    "sporeling.data.text",
    "sporeling.data.transforms",
    "sporeling.data.vision",
    # MindSpore's module paths
    "sporeling.data.vision.c_transforms",
    "sporeling.data.vision.py_transforms",
    "sporeling.data.vision.transforms",
    "sporeling.data.vision.utils",
    "sporeling.data.transforms.c_transforms",
    "sporeling.data.transforms.py_transforms",
    "sporeling.data.transforms.transforms",
]

SNAPSHOT = Path(__file__).with_name("api_snapshot.txt")


def test_public_api_snapshot():
    added = check_snapshot(MODULES, SNAPSHOT)
    if added:  # not a failure: recorded when the file is next regenerated
        print(f"{len(added)} public names not yet in {SNAPSHOT.name}:", *added, sep="\n  + ")
