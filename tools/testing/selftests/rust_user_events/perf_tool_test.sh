#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The real perf tool on a user event (TAP): `perf record -e user_events:NAME`
# around a program that writes five events, then `perf script` must show every
# field of every event, a perf filter on a field must select samples, and
# `perf stat` must count them. Then the same recording of a real client
# (rue_otel_demo_rs: OpenTelemetry's user_events logs exporter), decoded by
# Microsoft's decoder (rue_perf_decode_rs), must hold every log it wrote.
# Runs in the test VM; perf comes from tools/testing/guest-perf.sh.
T=/sys/kernel/tracing
EVENT=rue_perf_tool
N=5
n=0
failed=0

check() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=1
	fi
}

echo "TAP version 13"
echo "1..12"

FIELDS="u32 count; u64 value; char[8] tag"

echo "u:$EVENT $FIELDS" >>$T/dynamic_events
check $? "dynamic_events creates $EVENT"

perf record -q -e user_events:$EVENT -o /tmp/perf.data -- perf_tool_writer $N
check $? "perf record: the writer found the event enabled and wrote $N events"

perf script -i /tmp/perf.data >/tmp/perf.script 2>/tmp/perf.script.err
check $? "perf script reads the recording"
sed 's/^/# /' /tmp/perf.script /tmp/perf.script.err

lines=$(grep -c "user_events:$EVENT:" /tmp/perf.script)
[ "$lines" -eq $N ]
check $? "perf script shows $N samples (saw $lines)"

missing=0
i=0
while [ $i -lt $N ]; do
	grep -q "perf_tool_write.* user_events:$EVENT: count=$i value=$((i * 1000 + 7)) tag=rue\$" /tmp/perf.script ||
		missing=$((missing + 1))
	i=$((i + 1))
done
[ $missing -eq 0 ]
check $? "every sample shows the writer's comm and its count, value and tag fields ($missing missing)"

# perf's own event filter runs on the record's fields, as for any tracepoint.
perf record -q -e user_events:$EVENT --filter 'count >= 3' -o /tmp/perf.filtered -- perf_tool_writer $N &&
	perf script -i /tmp/perf.filtered >/tmp/perf.filtered.script 2>/dev/null
status=$?
sed 's/^/# /' /tmp/perf.filtered.script
[ $status -eq 0 ] && [ "$(grep -c "user_events:$EVENT:" /tmp/perf.filtered.script)" -eq 2 ] &&
	grep -q "count=3 " /tmp/perf.filtered.script && grep -q "count=4 " /tmp/perf.filtered.script
check $? "perf record --filter 'count >= 3' keeps exactly the samples with count 3 and 4"

perf stat -x, -e user_events:$EVENT -o /tmp/perf.stat -- perf_tool_writer $N
status=$?
sed 's/^/# /' /tmp/perf.stat
[ $status -eq 0 ] && grep -q "^$N,,user_events:$EVENT," /tmp/perf.stat
check $? "perf stat counts $N events"

grep -q "^$EVENT\$" $T/user_events_status
check $? "with perf gone, user_events_status lists $EVENT without consumers"

# As upstream, "-:NAME" alone only matches an event without fields.
echo "-:$EVENT $FIELDS" >>$T/dynamic_events && ! grep -q "^$EVENT" $T/user_events_status
check $? "dynamic_events deletes $EVENT"

# A real client: the exporter registers OTEL with the EventHeader fields, as created here.
OTEL=rue_otel_demo_L4K1
EH_FIELDS="u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level"
echo "u:$OTEL $EH_FIELDS" >>$T/dynamic_events &&
	perf record -q --sample-identifier -e user_events:$OTEL -o /tmp/perf.otel \
		-- rue_otel_demo_rs 3 >/tmp/perf.otel.out 2>&1
status=$?
sed 's/^/# /' /tmp/perf.otel.out
[ $status -eq 0 ] && grep -q "logged 3 records, skipped 0" /tmp/perf.otel.out
check $? "perf record: the OpenTelemetry exporter found Info enabled and logged 3 records"

rue_perf_decode_rs /tmp/perf.otel >/tmp/perf.otel.json 2>&1
status=$?
sed 's/^/# /' /tmp/perf.otel.json
missing=0
i=0
while [ $i -lt 3 ]; do
	grep -q "^user_events:$OTEL rue_otel_demo:Log {\"__csver__\": 1024, .*\"PartC\": { \"count\": $i }, \"PartB\": { \"_typeName\": \"Log\", \"body\": \"hello from OpenTelemetry\", \"severityNumber\": 9, \"severityText\": \"INFO\", \"name\": \"demo-event\" }, .*\"level\": 4, \"keyword\": \"0x1\" } }\$" /tmp/perf.otel.json ||
		missing=$((missing + 1))
	i=$((i + 1))
done
[ $status -eq 0 ] && [ $missing -eq 0 ]
check $? "Microsoft's decoder reads every log back from perf.data ($missing missing)"

echo "-:$OTEL $EH_FIELDS" >>$T/dynamic_events && ! grep -q "^$OTEL" $T/user_events_status
check $? "dynamic_events deletes $OTEL"

exit $failed
