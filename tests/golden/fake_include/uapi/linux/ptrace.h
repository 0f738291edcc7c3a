#include "../../bcc_fake.h"
