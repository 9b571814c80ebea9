import time, tempfile, sys
from pathlib import Path
from kernelgraph.service import migrate
from tests.upgrade.release_server import release_graph
home=Path(tempfile.mkdtemp()); print(home)
with release_graph(sys.argv[1], home) as (server, store):
    migrate.apply(store)
    t=time.time()
print("stop", time.time()-t)
