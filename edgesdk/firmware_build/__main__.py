"""`python3 -m edgesdk.firmware_build`: print the folder of the firmware's CMake project (CMakeLists.txt and
the test harness), for building a generated project by hand (README, "Building the generated project by
hand")."""

from .build import CMAKE_PROJECT_DIR

print(CMAKE_PROJECT_DIR)
