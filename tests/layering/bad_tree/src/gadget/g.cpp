// Breaks the rules: src/gadget is not a layer.
#include "rewind/error.hpp"
