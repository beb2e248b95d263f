// SPDX-License-Identifier: GPL-2.0
/*
 * rue_calibrate: how much slower than the reference machine this run is, measured once per
 * test VM run by tools/vm/init before any test, with the module loaded and idle. Prints the
 * slowness and the cap above which the run's time bounds are not trusted ("1.00 4.00"); init
 * hands the slowness (at most the cap) to every test in RUE_SLOWNESS (rue_helpers.h).
 */
#include "rue_helpers.h"

int main(void)
{
	double slowness = rue_measure_slowness();

	if (slowness < 1.0) {
		fprintf(stderr, "rue_calibrate: cannot write /dev/null: %s\n", strerror(errno));
		return 1;
	}
	printf("%.2f %.2f\n", slowness, RUE_SLOWNESS_CAP);
	return 0;
}
