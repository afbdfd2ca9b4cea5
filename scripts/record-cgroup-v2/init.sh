#!/bin/busybox sh
# PID 1 of the recording VM: a unified cgroup hierarchy with the memory, cpu and pids
# controllers, laid out as Docker's systemd driver lays it (system.slice/docker-<id>.scope), one
# app container that holds anonymous memory and page cache and burns CPU under a 64 MiB limit,
# one sandbox with no limit; the files the readings use are printed twice, a second apart.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# Page cache must be a real block filesystem's (tmpfs pages are shmem): ext4 on a ramdisk.
for m in crc32c_generic crc16 mbcache jbd2 ext4; do insmod /mod/$m.ko; done
insmod /mod/brd.ko rd_size=32768 rd_nr=1
gunzip -c /fs.img.gz > /dev/ram0
mkdir -p /data && mount -t ext4 /dev/ram0 /data
yes aaaaaaaaaaaaaaa | head -c 8000000 > /tmp/big
mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup
echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/system.slice
echo "+cpu +memory +pids" > /sys/fs/cgroup/system.slice/cgroup.subtree_control
APP=/sys/fs/cgroup/system.slice/docker-APPID.scope
SB=/sys/fs/cgroup/system.slice/docker-SANDBOXID.scope
mkdir $APP $SB
echo 67108864 > $APP/memory.max
sh -c "echo \$\$ > $SB/cgroup.procs; exec sleep 60" &
sh -c "echo \$\$ > $APP/cgroup.procs"'
  x=$(cat /tmp/big)
  dd if=/dev/zero of=/data/cache bs=1M count=6 2>/dev/null; sync; cat /data/cache > /dev/null
  burn() { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; }
  burn 200000; echo > /tmp/first
  while [ ! -f /tmp/go ]; do burn 1000; done
  burn 100000; echo > /tmp/second
  sleep 60; echo $x > /dev/null' &
dump() {
  echo "=== SNAPSHOT $1"
  for c in APPID SANDBOXID; do
    for f in cgroup.procs cpu.stat memory.current memory.max memory.stat pids.current; do
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
