import time, tempfile
from pathlib import Path
from kernelgraph.core.settings import Settings
from kernelgraph.service.neo4j_local import LocalNeo4j
from tests.upgrade.release_server import GRAPHS, free_port
home=Path(tempfile.mkdtemp())
s=Settings(data_home=home,bolt_port=free_port(),http_port=free_port(),neo4j_heap="512m",neo4j_pagecache="128m")
srv=LocalNeo4j(s)
t=time.time(); srv.install(); srv.write_conf(); print("install", time.time()-t)
t=time.time(); srv.ensure_password(); print("password", time.time()-t)
t=time.time(); srv.load(GRAPHS/"v4"/"graph.dump"); print("load", time.time()-t)
t=time.time(); srv.start(); print("start", time.time()-t)
t=time.time(); srv.stop(); print("stop", time.time()-t)
