#!/usr/bin/env bash
# Start librdkafka's mock Kafka cluster (shipped in Debian's kcat) in the background and
# print its bootstrap address (127.0.0.1:PORT) on stdout; its pid goes to $KAFKA_MOCK_PID_FILE
# (default /tmp/outboxkit-kafka-mock.pid) and the address to $KAFKA_MOCK_ADDRESS_FILE
# (default /tmp/outboxkit-kafka-mock.address), so a later run can find or stop it.
#
# The mock speaks the real Kafka protocol on a TCP port; its limits (see docs/transports.md):
# topics are auto-created with 4 partitions (no admin creation), no idempotent producer,
# empty fetches wait the full maxWaitTimeInMs, a new consumer group takes ~3 s to join.
#
# Usage: export OUTBOX_TEST_KAFKA_BROKERS="$(.ci/kafka-mock.sh)"
set -euo pipefail
pid_file=${KAFKA_MOCK_PID_FILE:-/tmp/outboxkit-kafka-mock.pid}
address_file=${KAFKA_MOCK_ADDRESS_FILE:-/tmp/outboxkit-kafka-mock.address}

# Already running (a previous CI step): reuse it.
if [[ -s $pid_file && -s $address_file ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  cat "$address_file"; exit 0
fi
command -v kcat >/dev/null || { echo "kcat is not installed (apt-get install -y kcat)" >&2; exit 1; }

log=$(mktemp)
# A consumer of an unused topic keeps the mock cluster alive as long as kcat runs.
nohup kcat -b 127.0.0.1:1 -X test.mock.num.brokers=1 -C -t __keepalive -o end -q -u \
  >/dev/null 2>"$log" &
echo $! >"$pid_file"
for _ in $(seq 1 100); do
  if address=$(grep -o 'replaced with [0-9.]*:[0-9]*' "$log" | head -n1 | awk '{print $3}') \
    && [[ -n $address ]]; then
    echo "$address" >"$address_file"
    echo "$address"
    exit 0
  fi
  sleep 0.1
done
echo "the kcat mock cluster did not print its address:" >&2; cat "$log" >&2; exit 1
