#!/bin/busybox sh
# PID 1 of the recording VM: a unified cgroup hierarchy with the memory, cpu and pids
# controllers, laid out as Docker's systemd driver lays it (system.slice/docker-<id>.scope), one
# app container that holds anonymous memory and page cache and burns CPU under a 64 MiB limit,
# one sandbox with no limit; the files the readings use are printed twice, a second apart.
# The "extras" scenario (/scenario, written by record.sh) is for the series dashboards read beyond
# CPU and memory (issue 32): the io controller on, and the app given a CPU quota (cpu.max 20 ms a
# 100 ms period, so its burner is throttled), a weight, a pids limit, a child that outgrows the
# memory limit (the kernel kills it: memory.events oom_kill) and writes to ext4 (io.stat).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
SCENARIO=$(cat /scenario 2>/dev/null)
# Page cache must be a real block filesystem's (tmpfs pages are shmem): ext4 on a ramdisk.
for m in crc32c_generic crc16 mbcache jbd2 ext4; do insmod /mod/$m.ko; done
insmod /mod/brd.ko rd_size=32768 rd_nr=1
gunzip -c /fs.img.gz > /dev/ram0
mkdir -p /data && mount -t ext4 /dev/ram0 /data
yes aaaaaaaaaaaaaaa | head -c 8000000 > /tmp/big
CONTROLLERS="+cpu +memory +pids"
FILES="cgroup.procs cpu.stat memory.current memory.max memory.stat pids.current"
if [ "$SCENARIO" = extras ]; then
  CONTROLLERS="$CONTROLLERS +io"
  FILES="cgroup.procs cpu.stat cpu.max cpu.weight memory.current memory.max memory.stat memory.events memory.swap.current memory.swap.max io.stat pids.current pids.max"
fi
mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup
echo "$CONTROLLERS" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/system.slice
echo "$CONTROLLERS" > /sys/fs/cgroup/system.slice/cgroup.subtree_control
APP=/sys/fs/cgroup/system.slice/docker-APPID.scope
SB=/sys/fs/cgroup/system.slice/docker-SANDBOXID.scope
mkdir $APP $SB
echo 67108864 > $APP/memory.max
sh -c "echo \$\$ > $SB/cgroup.procs; exec sleep 60" &
if [ "$SCENARIO" = extras ]; then
  echo "20000 100000" > $APP/cpu.max
  echo 39 > $APP/cpu.weight
  echo 100 > $APP/pids.max
  sh -c "echo \$\$ > $APP/cgroup.procs"'
    burn() { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; }
    burn 30000; echo > /tmp/first
    while [ ! -f /tmp/go ]; do burn 1000; done
    sh -c "x=\$(head -c 90000000 /dev/zero | tr \"\\\\0\" a); echo \${#x}"
    dd if=/dev/zero of=/data/out bs=1M count=4 conv=fsync 2>/dev/null
    cat /data/out > /dev/null
    burn 30000; echo > /tmp/second
    sleep 60' &
else
  sh -c "echo \$\$ > $APP/cgroup.procs"'
    x=$(cat /tmp/big)
    dd if=/dev/zero of=/data/cache bs=1M count=6 2>/dev/null; sync; cat /data/cache > /dev/null
    burn() { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; }
    burn 200000; echo > /tmp/first
    while [ ! -f /tmp/go ]; do burn 1000; done
    burn 100000; echo > /tmp/second
    sleep 60; echo $x > /dev/null' &
fi
dump() {
  echo "=== SNAPSHOT $1"
  for c in APPID SANDBOXID; do
    for f in $FILES; do
      echo "== system.slice/docker-$c.scope/$f"; cat /sys/fs/cgroup/system.slice/docker-$c.scope/$f
    done
  done
}
while [ ! -f /tmp/first ]; do sleep 0.1; done
echo "=== KERNEL $(uname -r)"
dump 1
sleep 1; echo > /tmp/go
while [ ! -f /tmp/second ]; do sleep 0.1; done
dump 2
echo "=== END"
poweroff -f
