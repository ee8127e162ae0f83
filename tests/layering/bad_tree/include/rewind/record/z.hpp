// Breaks the rules: the record layer includes HDF5.
#pragma once
#include <H5public.h>

#include "rewind/schedule/action.hpp"
