import sys

from chaos.drill import main

sys.exit(main(sys.argv[1:]))
