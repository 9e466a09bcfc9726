"""A DBOS process for the recovery figure. PEERS_DBOS_MODE=crash starts the workflow and
hangs in its second step (the parent kills it with SIGKILL); =recover launches DBOS on the
same database and lets recovery finish the workflow, printing when step two starts again.

Usage: python dbos_child.py URL WORKFLOW_ID
"""

from __future__ import annotations

import os
import sys

from dbos import DBOS, SetWorkflowID

import dbos_app
from common import now


def main() -> None:
    url, workflow_id = sys.argv[1], sys.argv[2]
    DBOS(config=dbos_app.config(url))
    dbos_app.LAUNCH_STARTED[0] = now()
    DBOS.launch()
    print(f"LAUNCHED {now() - dbos_app.LAUNCH_STARTED[0]:.6f}", flush=True)
    if os.environ.get("PEERS_DBOS_MODE") == "crash":
        with SetWorkflowID(workflow_id):
            handle = DBOS.start_workflow(dbos_app.crash_workflow)
    else:
        handle = DBOS.retrieve_workflow(workflow_id)
    print(f"RESULT {handle.get_result()}", flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
