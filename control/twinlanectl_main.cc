// twinlanectl's entry point; everything else is in twinlanectl.cc (testable in-process).
#include <iostream>

#include "control/twinlanectl.h"

int main(int argc, char** argv) {
    return twinlane::control::run_twinlanectl(argc, argv, std::cout, std::cerr);
}
