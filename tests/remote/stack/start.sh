#!/usr/bin/env bash
# Start a local NDIF server (Redis, moto's S3, a Ray head with ndif's controller, ndif's API) and deploy the model
# folders given as arguments.  Runs inside a network namespace that has only loopback (tests/remote/conftest.py
# checks that), so nothing listens on or reaches another address.  Each background service is recorded in $RUN_DIR/pids
# as "name pid" (its own session: the pid is also its process group).
set -euo pipefail
: "${RUN_DIR:?}" "${SERVER_VENV:?}"
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/env.sh"
mkdir -p "$RUN_DIR/logs" "$NDIF_HOME" "$NDIF_RAY_TEMP_DIR"
LOG=$RUN_DIR/logs
say() { echo "[$(date +%T)] $*"; }
wait_port() { for _ in $(seq 1 240); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.5; done
              echo "port $1 never opened (logs: $LOG)" >&2; return 1; }
bg() { local name=$1; shift; setsid nohup "$@" > "$LOG/$name.log" 2>&1 < /dev/null & echo "$name $!" >> "$RUN_DIR/pids"; }

bg redis redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no
bg moto moto_server -H 127.0.0.1 -p 9000
wait_port 6379; wait_port 9000; say "redis and S3 up"
memory=$(python -c 'import psutil; print(psutil.virtual_memory().total)')
# ndif places models only on nodes with a GPU resource; Ray does not check that one is real
ray start --head --node-ip-address=127.0.0.1 --port="$NDIF_RAY_HEAD_PORT" --num-cpus=4 --num-gpus=1 \
  --resources="{\"head\": 10, \"cuda_memory_bytes\": 8000000000, \"cpu_memory_bytes\": $memory}" \
  --object-store-memory=200000000 --ray-client-server-port=10001 --include-dashboard=true \
  --dashboard-host=127.0.0.1 --dashboard-port=8265 --temp-dir="$NDIF_RAY_TEMP_DIR" --disable-usage-stats > "$LOG/ray.log" 2>&1
say "ray head up"
NDIF_SERVICE=ray RAY_ADDRESS=127.0.0.1:$NDIF_RAY_HEAD_PORT python -m ndif.services.ray.deployments.controller.controller \
  > "$LOG/controller.log" 2>&1
say "controller launched"
api_sh=$(python -c "import ndif, os; print(os.path.join(os.path.dirname(ndif.__file__), 'services/api/start.sh'))")
GUNICORN_CMD_ARGS="--control-socket $RUN_DIR/gunicorn.ctl" NDIF_SERVICE=api bg api bash "$api_sh"
wait_port "$NDIF_API_PORT"; say "API listening"
python "$HERE/deploy.py" "$@" > "$LOG/deploy.log" 2>&1 || { cat "$LOG/deploy.log" >&2; exit 1; }
say "deployed: $*"
