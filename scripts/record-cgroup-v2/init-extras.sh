#!/bin/busybox sh
# PID 1 of the recording VM for the series dashboards read beyond CPU and memory (issue 32): the
# same layout as init.sh, with the io controller on and the app container given a CPU quota
# (cpu.max 20 ms a 100 ms period, so its burner is throttled), a weight, a pids limit and a 64 MiB
# memory limit that a child outgrows (the kernel kills it: memory.events oom_kill), and writes to
# ext4 on a ramdisk (io.stat). Each file the readings use is printed twice, a second apart.
/bin/busybox --install -s /bin
echo "=== BOOTED"
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in crc32c_generic crc16 mbcache jbd2 ext4; do insmod /mod/$m.ko; done
insmod /mod/brd.ko rd_size=32768 rd_nr=1
gunzip -c /fs.img.gz > /dev/ram0
mkdir -p /data && mount -t ext4 /dev/ram0 /data
mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/system.slice
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/system.slice/cgroup.subtree_control
APP=/sys/fs/cgroup/system.slice/docker-APPID.scope
SB=/sys/fs/cgroup/system.slice/docker-SANDBOXID.scope
mkdir $APP $SB
echo 67108864 > $APP/memory.max
echo "20000 100000" > $APP/cpu.max
echo 39 > $APP/cpu.weight
echo 100 > $APP/pids.max
sh -c "echo \$\$ > $SB/cgroup.procs; exec sleep 60" &
sh -c "echo \$\$ > $APP/cgroup.procs"'
  burn() { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; }
  burn 30000; echo > /tmp/first
  while [ ! -f /tmp/go ]; do burn 1000; done
  sh -c "x=\$(head -c 90000000 /dev/zero | tr \"\\\\0\" a); echo \${#x}"
  dd if=/dev/zero of=/data/out bs=1M count=4 conv=fsync 2>/dev/null
  cat /data/out > /dev/null
  burn 30000; echo > /tmp/second
  sleep 60' &
dump() {
  echo "=== SNAPSHOT $1"
  for c in APPID SANDBOXID; do
    for f in cgroup.procs cpu.stat cpu.max cpu.weight memory.current memory.max memory.stat memory.events memory.swap.current memory.swap.max io.stat pids.current pids.max; do
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
