# llama.cpp's own HTTP server (the one `llama-server` runs), embedded by the `xllamacpp` wheel, serving one GGUF model
# on an OpenAI-compatible API. Started by stack/local-model.ts; prints "listening <url>" once it answers.
import argparse
import os
import signal
import threading

import xllamacpp as xlc

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--parallel", type=int, default=4)
parser.add_argument("--ctx-per-slot", type=int, default=4096)
args = parser.parse_args()

params = xlc.CommonParams()
params.model.path = args.model
params.hostnames = ["127.0.0.1"]
params.port = args.port
# Slots share one context: each concurrent request gets ctx-per-slot tokens.
params.n_parallel = args.parallel
params.n_ctx = args.ctx_per_slot * args.parallel
params.cpuparams.n_threads = args.threads
params.cpuparams_batch.n_threads = args.threads

server = xlc.Server(params)
print("listening", server.listening_address, flush=True)

# The server runs on its own threads; this one waits for SIGTERM/SIGINT, then ends the process at once (the server's
# threads are not daemons and would keep it alive).
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
os._exit(0)
