export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=262144
A=.devcarry/final/libcubatch.so B=.devcarry/new/libcubatch.so
sha256sum $A $B | cut -c1-12
for i in 1 2 3 4 5 6 7 8 9 10; do for s in side legacy; do
  if [ $((i % 2)) = 1 ]; then x=$A y=$B o=AB; else x=$B y=$A o=BA; fi
  echo "## $o $s $i"; taskset -c 3 .devcarry/bin/launch_hook -r 21 -n 4096 -s $s -l $PWD/$x -l $PWD/$y 2>&1 | grep -v "^column"
done; done
