"""sporeling.recommender's public names, per public module, against tests/api_snapshot.txt.

As the core's test (packages/core-runtime/tests/test_api_snapshot.py): a public name lost by
accident fails here, listing what was lost; new names pass (printed, with ``-s``) until the
file is regenerated. After an intended change, regenerate and commit the file::

    SPORELING_UPDATE_API_SNAPSHOT=1 nox -R -s "tests(package='recommender')" -- \\
        packages/recommender/tests/test_api_snapshot.py
"""

from pathlib import Path

from sporeling_testing.api_snapshot import check_snapshot

MODULES = [
    "sporeling.recommender",
    "sporeling.recommender.cache",
    "sporeling.recommender.criteo",
    "sporeling.recommender.host_cache",
    "sporeling.recommender.metrics",
    "sporeling.recommender.model_api",
    "sporeling.recommender.models",
    "sporeling.recommender.preprocess",
    "sporeling.recommender.ps",
    "sporeling.recommender.ps_cache",
    "sporeling.recommender.records",
    "sporeling.recommender.runner",
    "sporeling.recommender.sharding",
    "sporeling.recommender.synthetic",
    "sporeling.recommender.train",
]

SNAPSHOT = Path(__file__).with_name("api_snapshot.txt")


def test_public_api_snapshot():
    added = check_snapshot(MODULES, SNAPSHOT)
    if added:  # not a failure: recorded when the file is next regenerated
        print(f"{len(added)} public names not yet in {SNAPSHOT.name}:", *added, sep="\n  + ")
