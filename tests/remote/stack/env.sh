# The local NDIF stack's settings (sourced by start.sh inside the test's network namespace). ndif reads only NDIF_*.
# Needs: RUN_DIR (a fresh scratch folder, short path: Ray's sockets live there), SERVER_VENV (the server's venv).
export NDIF_HOME=$RUN_DIR/home
export NDIF_REDIS_URL=redis://127.0.0.1:6379
export NDIF_OBJECT_STORE_URL=http://127.0.0.1:9000      # moto's S3 server instead of ndif's default rustfs
export NDIF_OBJECT_STORE_ACCESS_KEY=testing NDIF_OBJECT_STORE_SECRET_KEY=testing
export NDIF_OBJECT_STORE_BUCKET=ndif-results NDIF_OBJECT_STORE_REGION=us-east-1
export NDIF_RAY_ADDRESS=ray://127.0.0.1:10001 NDIF_RAY_HEAD_PORT=6385 NDIF_RAY_TEMP_DIR=$RUN_DIR/ray
export NDIF_API_PORT=8001 NDIF_API_URL=http://127.0.0.1:8001 NDIF_API_WORKERS=1
export NDIF_MODEL_IMPORT_PATH=ndif_cpu.actor.CPUModelActor   # our CPU model actor (this folder), not ndif's CUDA one
export NDIF_DEFAULT_DTYPE=float32 NDIF_DEFAULT_PADDING_BIAS=0 NDIF_CONTROLLER_SYNC_INTERVAL_S=30
export NDIF_ENVIRONMENT=local NDIF_LOG_LEVEL=INFO
export PYTHONPATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)   # Ray workers import ndif_cpu from here
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRPC_ENABLE_FORK_SUPPORT=0 RAY_USAGE_STATS_ENABLED=0
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export PATH=$SERVER_VENV/bin:$PATH
