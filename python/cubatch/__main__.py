"""python -m cubatch [options] [--] command [args...]: the cubatch launcher."""
from ._launch import main

main()
