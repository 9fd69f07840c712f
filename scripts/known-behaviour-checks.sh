# Sourced by scripts/interop-jfr and scripts/interop-jvm-agent: checks a trace of
# KnownBehaviour (the jvm module's test program) with trace_processor_shell.
#   check_known_behaviour TRACE_PROCESSOR_SHELL TRACE WORK_DIR
# prints the tables it checks, and sets failed=1 (and says why on stderr) when the trace
# does not show what the program did.
check_known_behaviour() {
  local tp="$1" trace="$2" dir="$3"
  failed=0
  query() { # SQL -> rows without the header
    echo "$1" > "$dir/q.sql"
    "$tp" -q "$dir/q.sql" "$trace" 2>/dev/null | tail -n +2
  }
  show() { # TITLE SQL
    echo "== $1"
    echo "$2" > "$dir/q.sql"
    "$tp" -q "$dir/q.sql" "$trace" 2>/dev/null
  }
  expect() { # WHAT ACTUAL EXPECTED
    if [ "$2" != "$3" ]; then
      echo "known-behaviour: $1: got '$2', expected '$3'" >&2
      failed=1
    fi
  }

  thread_slices="select t.name as thread, s.name, round(s.dur / 1e6, 1) as ms, s.depth
    from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
    where t.name like 'known-%' order by s.ts"
  show "slices on the program's threads" "$thread_slices"
  show "garbage collections and their phases" "select t.name as track, s.depth, s.name, count(*) as n,
    round(avg(s.dur) / 1e6, 2) as avg_ms from slice s join track t on s.track_id = t.id
    where t.name like 'GC %' group by 1, 2, 3 order by 1, 2, 4 desc"
  show "CPU samples by top frame" "select t.name as thread, f.name as top_frame, count(*) as samples
    from perf_sample p join stack_profile_callsite c on p.callsite_id = c.id
    join stack_profile_frame f on c.frame_id = f.id join thread t using (utid)
    group by 1, 2 order by 3 desc limit 5"
  show "heap profile by leaf" "select f.name as leaf, sum(a.size) as bytes, sum(a.count) as samples, a.heap_name
    from heap_profile_allocation a join stack_profile_callsite c on a.callsite_id = c.id
    join stack_profile_frame f on c.frame_id = f.id group by 1 order by 2 desc limit 4"
  show "counters" "select t.name as counter, count(*) as values_, round(max(c.value), 1) as max
    from counter c join counter_track t on c.track_id = t.id group by 1 order by 1"
  show "flows" "select so.name as from_slice, tout.name as from_thread, si.name as to_slice, tin.name as to_thread
    from flow f join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id
    join thread_track a on so.track_id = a.id join thread tout on a.utid = tout.utid
    join thread_track b on si.track_id = b.id join thread tin on b.utid = tin.utid
    where tin.name like 'known-%'"

  expect "error and data-loss stats" "$(query "select count(*) from stats where value > 0
    and severity in ('error', 'data_loss')")" 0
  expect "System.gc() collections" "$(query "select count(*) from slice s join args a using (arg_set_id)
    where s.depth = 0 and a.key = 'debug.cause' and a.string_value = 'System.gc()'")" 3
  within() { # THREAD SLICE MILLIS: 1 when that one slice lasted within 10% of MILLIS
    query "select count(*) from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
      where t.name = '$1' and s.name = '$2' and abs(s.dur / 1e6 - $3) <= $3 * 0.1"
  }
  expect "the park on known-parker" "$(within known-parker 'Thread park' 200)" 1
  expect "the monitor enter on known-waiter" "$(within known-waiter 'Monitor enter' 150)" 1
  expect "the sleep on known-sleeper" "$(within known-sleeper 'Thread sleep' 100)" 1
  expect "the top frame of most known-hot samples" "$(query "select f.name from perf_sample p
    join stack_profile_callsite c on p.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id
    join thread t using (utid) where t.name = 'known-hot' group by 1 order by count(*) desc limit 1")" \
    '"dev.ffmtrace.jvm.KnownBehaviour.hotLoop"'
  expect "the heap profile's largest leaf" "$(query "select f.name from heap_profile_allocation a
    join stack_profile_callsite c on a.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id
    group by 1 order by sum(a.size) desc limit 1")" '"dev.ffmtrace.jvm.KnownBehaviour$KnownAllocation"'
  expect "the flow from the monitor's owner" "$(query "select tout.name || ' -> ' || tin.name from flow f
    join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id
    join thread_track a on so.track_id = a.id join thread tout on a.utid = tout.utid
    join thread_track b on si.track_id = b.id join thread tin on b.utid = tin.utid
    where si.name = 'Monitor acquired' and tin.name = 'known-waiter'")" '"known-holder -> known-waiter"'
  for counter in "Heap used" "Heap committed" "Metaspace used" "JVM user CPU %" "Machine CPU %" "Java threads" \
      "Allocation rate (bytes/s)"; do
    expect "values of counter $counter" "$(query "select count(*) > 0 from counter c
      join counter_track t on c.track_id = t.id where t.name = '$counter'")" 1
  done
}
