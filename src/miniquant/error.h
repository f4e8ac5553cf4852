// The error types live in util/error.h, the bottom layer that util's checked I/O throws them from; this name
// stays for the code above util and for learners' lab files written against it.
#pragma once
#include "miniquant/util/error.h"
