# Makes Eigen 3.4 findable when no Eigen3 is yet (system package, -DEigen3_DIR,
# CMAKE_PREFIX_PATH): pip's cmeel-eigen installs its CMake package under
# <site-packages>/cmeel.prefix, where CMake does not look by itself. Looked for there:
#   - beside a cmake from pip (its site-packages holds cmake/data/bin/cmake);
#   - in the site-packages of the active virtual or conda environment, of the Python
#     given (Python_EXECUTABLE / Python3_EXECUTABLE), and of python3 on PATH.
# Nothing is cached, so a configure that failed (no Eigen yet, or a pyenv shim's Python
# on PATH) does not pin its answer for the next one. Also included by the installed
# nytroConfig.cmake, where it searches the consumer's environment, not the builder's.
# Sets NYTRO_EIGEN_HINT: how to get Eigen, for the caller's error message.
string(CONCAT NYTRO_EIGEN_HINT
  "Eigen 3.4 (a header-only library) was not found. Get it in one of these ways:\n"
  "  Debian/Ubuntu:  sudo apt install libeigen3-dev\n"
  "  pip (any OS):   python -m pip install cmeel-eigen   then configure again from the same\n"
  "                  environment, or pass its prefix explicitly:\n"
  "                  -DCMAKE_PREFIX_PATH=\"$(python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')/cmeel.prefix\"\n"
  "  or point -DEigen3_DIR at the folder that holds Eigen3Config.cmake.")

find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT Eigen3_FOUND)
  set(_nytro_cmeel_prefixes "")
  # A cmake from pip: <site-packages>/cmake/data/bin/cmake.
  get_filename_component(_nytro_site "${CMAKE_COMMAND}" DIRECTORY)
  get_filename_component(_nytro_site "${_nytro_site}/../../.." ABSOLUTE)
  if(IS_DIRECTORY "${_nytro_site}/cmeel.prefix")
    list(APPEND _nytro_cmeel_prefixes "${_nytro_site}/cmeel.prefix")
  endif()
  set(_nytro_pythons "")
  foreach(_nytro_env VIRTUAL_ENV CONDA_PREFIX)
    if(DEFINED ENV{${_nytro_env}} AND EXISTS "$ENV{${_nytro_env}}/bin/python")
      list(APPEND _nytro_pythons "$ENV{${_nytro_env}}/bin/python")
    endif()
  endforeach()
  foreach(_nytro_var Python_EXECUTABLE Python3_EXECUTABLE)
    if(${_nytro_var})
      list(APPEND _nytro_pythons "${${_nytro_var}}")
    endif()
  endforeach()
  find_program(_nytro_path_python NAMES python3 python)
  if(_nytro_path_python)
    list(APPEND _nytro_pythons "${_nytro_path_python}")
  endif()
  unset(_nytro_path_python CACHE)
  list(REMOVE_DUPLICATES _nytro_pythons)
  foreach(_nytro_python IN LISTS _nytro_pythons)
    execute_process(
      COMMAND "${_nytro_python}" -c
        "import os, sys; print(';'.join(os.path.join(p, 'cmeel.prefix') for p in sys.path if os.path.isdir(os.path.join(p, 'cmeel.prefix'))))"
      OUTPUT_VARIABLE _nytro_found
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND _nytro_cmeel_prefixes ${_nytro_found})
  endforeach()
  if(_nytro_cmeel_prefixes)
    list(REMOVE_DUPLICATES _nytro_cmeel_prefixes)
    message(STATUS "nytro: looking for Eigen3 under ${_nytro_cmeel_prefixes}")
    list(APPEND CMAKE_PREFIX_PATH ${_nytro_cmeel_prefixes})
  endif()
endif()
