import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0001_initial'),
        ('review', '0003_alter_factprobe_version'),
    ]

    # The same table: only the model's app changed (jobs.Job).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='judgerun',
                    name='job',
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='judge_run', to='jobs.job'),
                ),
            ],
            database_operations=[],
        ),
    ]
