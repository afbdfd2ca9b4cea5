#!/bin/bash
# Records a real cgroup v1 tree for the unit tests (test/fixtures/cgroup/v1-docker-cgroupfs-extras.txt)
# on a machine whose hierarchy is v1 with Docker's cgroupfs driver: one container under a CPU quota
# (--cpus 0.2) that burns CPU, a 64 MiB limit that a child outgrows (the kernel kills it), a
# pids limit, and 8 MiB written with fsync. The files the readings use are printed with the
# container's id as ID. A throttle rule on the device (1 TiB/s, never reached) makes blkio count:
# recent kernels keep blkio.throttle.* at zero on a queue with no rule.
#   scripts/record-cgroup-v1/record.sh test/fixtures/cgroup
set -euo pipefail
out=$(realpath "${1:?output directory}")
image=${IMAGE:-podrun-test/busybox:1}
id=$(docker run -d --cpus 0.2 --memory 64m --memory-swap 64m --pids-limit 100 --cpu-shares 512 "$image" sh -c 'while [ ! -f /go ]; do sleep 0.1; done
  sh -c "x=\$(head -c 90000000 /dev/zero | tr \"\\\\0\" a); echo \${#x}"
  dd if=/dev/zero of=/out bs=1M count=8 conv=fsync 2>/dev/null
  i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo > /done; sleep 600')
trap 'docker rm -f "$id" >/dev/null' EXIT
cg=/sys/fs/cgroup
dev=$(stat -c %d /var/lib/docker)
majmin="$((dev >> 8)):$((dev & 255))"
echo "$majmin 1099511627776" > "$cg/blkio/docker/$id/blkio.throttle.write_bps_device"
docker exec "$id" touch /go
until docker exec "$id" test -f /done; do sleep 0.5; done
{
  for f in cpuacct/cpuacct.usage cpuacct/cpuacct.stat cpu/cpu.stat cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us cpu/cpu.shares \
    memory/memory.usage_in_bytes memory/memory.limit_in_bytes memory/memory.stat memory/memory.failcnt memory/memory.oom_control \
    blkio/blkio.throttle.io_service_bytes_recursive blkio/blkio.throttle.io_serviced_recursive pids/pids.current pids/pids.max pids/cgroup.procs; do
    echo "== ${f%%/*}/docker/ID/${f#*/}"; cat "$cg/${f%%/*}/docker/$id/${f#*/}"
  done
} | sed "s/$id/ID/g" > "$out/v1-docker-cgroupfs-extras.txt"
echo "recorded from Linux $(uname -r) into $out/v1-docker-cgroupfs-extras.txt"
