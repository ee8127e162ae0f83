// Breaks the rules: a relative include into another layer's private headers.
#include "../storage/collective.hpp"
#include "rewind/record/checkpoint_record.hpp"
