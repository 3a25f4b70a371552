// gateway2nginx convert: its command line, and the files it writes.
#pragma once

namespace g2n::convert {

// argv after "convert"; the exit status
int convert_command(int argc, char **argv);

}  // namespace g2n::convert
