#!/bin/bash
# Records a real cgroup v2 tree for the unit tests (test/fixtures/cgroup/v2-*.txt) on a machine
# whose own hierarchy is v1: boots Debian 12's kernel under QEMU (no KVM needed) with init.sh as
# PID 1. Needs qemu-system-x86, e2fsprogs and network access to Debian's packages.
#   scripts/record-cgroup-v2/record.sh test/fixtures/cgroup [extras]
# With "extras", init.sh records that scenario (quota, OOM kill, IO) into v2-docker-systemd-extras-*.txt.
set -euo pipefail
out=$(realpath "${1:?output directory}")
scenario=${2:+-$2}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download linux-image-amd64 busybox-static >/dev/null 2>&1
kpkg=$(dpkg-deb -f linux-image-amd64_*.deb Depends | sed 's/ .*//')
apt-get download "$kpkg" >/dev/null 2>&1
dpkg -x "$kpkg"_*.deb k
dpkg -x busybox-static_*.deb bb
mods=$(echo k/lib/modules/*/kernel)
mkdir -p root/bin root/mod root/proc root/sys root/dev root/tmp
cp bb/bin/busybox root/bin/
cp "$here/init.sh" root/init
echo "${2:-}" > root/scenario
chmod +x root/init
cp "$mods"/crypto/crc32c_generic.ko "$mods"/lib/crc16.ko "$mods"/fs/mbcache.ko "$mods"/fs/jbd2/jbd2.ko "$mods"/fs/ext4/ext4.ko "$mods"/drivers/block/brd.ko root/mod/
truncate -s 24M fs.img
mkfs.ext4 -q -O ^metadata_csum,^has_journal,^64bit -F fs.img
gzip -c fs.img > root/fs.img.gz
(cd root && find . | ../bb/bin/busybox cpio -o -H newc 2>/dev/null | gzip > ../initrd.gz)
timeout "${RECORD_TIMEOUT:-300}" qemu-system-x86_64 -m 512 -nographic -no-reboot -kernel k/boot/vmlinuz-* -initrd initrd.gz \
  -append "console=ttyS0 quiet panic=-1" </dev/null | tr -d '\r' > console.log
grep -q "^=== END" console.log || { cat console.log >&2; exit 1; }
kernel=$(sed -n "s/.*=== KERNEL //p" console.log)
for n in 1 2; do
  sed -n "/^=== SNAPSHOT $n\$/,/^=== /p" console.log | sed '1d;$d' > "$out/v2-docker-systemd${scenario}-$n.txt"
done
echo "recorded from Linux $kernel into $out/v2-docker-systemd${scenario}-{1,2}.txt"
