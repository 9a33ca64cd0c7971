import sys

from hf_neuron.cli import main

sys.exit(main())
