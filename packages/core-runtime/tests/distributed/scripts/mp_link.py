"""Run under ``mpiexec -n 2``: ``sporeling plan --measure`` (MPI ping-pong link model)."""

import sys

from sporeling.core.parallel.cost_model import plan_main

if __name__ == "__main__":
    sys.exit(plan_main(["--measure", "--dp", "1,2"]))
